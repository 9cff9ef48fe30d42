//! Omid's steps, one file each, pure: the TSO's timestamps ([`begin`]) and
//! conflict detection ([`conflict`]), the commit table's conditional writes
//! ([`commit_table`]), a reader's resolution of a version ([`read`]), and
//! the TSO's lease and fencing ([`lease`]).

pub mod begin;
pub mod commit_table;
pub mod conflict;
pub mod lease;
pub mod read;

#[cfg(test)]
pub(crate) mod test_util;
