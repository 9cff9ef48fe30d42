//! The transaction buffer of a partition: transactional messages appended
//! with their TxnId and invisible until committed, commit and abort
//! markers, the aborted-transaction index, the max-read-position, the
//! read-committed dispatch filter, and recovery from the partition's log.

mod append;
mod end;
#[cfg(test)]
mod props;
mod read;
mod recover;
mod state;

pub use append::append;
pub use end::end;
pub use read::{Delivered, Delivery, ReadMode, read};
pub use recover::recover;
pub use state::{AppendError, Entry, TbState};
