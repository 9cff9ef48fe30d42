//! The transaction buffer of a partition: transactional messages appended
//! with their TxnId and invisible until committed, commit and abort
//! markers, the aborted-transaction index, the max-read-position, the
//! read-committed dispatch filter, snapshots of the aborted index, and
//! recovery from the latest snapshot and the partition's log after it.

mod append;
mod end;
#[cfg(test)]
mod props;
mod read;
mod recover;
mod snapshot;
mod state;

pub use append::append;
pub use end::end;
pub use read::{Delivered, Delivery, ReadMode, read};
pub use recover::{Recovered, recover, recover_from_snapshot};
pub use snapshot::snapshot;
pub use state::{AppendError, Entry, TbSnapshot, TbState};
