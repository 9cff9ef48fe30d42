//! Fencing: every durable log (the transaction log, a partition's log and
//! its subscriptions' logs) records the epoch of the owner allowed to
//! append. A new owner opens the log at its own epoch, which fences every
//! older owner (BookKeeper: opening a ledger for recovery fences it, and
//! the old writer's next add fails). An append made at another epoch is
//! refused and must not land; the refused owner stops serving the
//! resource.

use serde::{Deserialize, Serialize};

/// A log's epoch and a writer's (the owner that opens or appends).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Epochs {
    /// The epoch the log was last opened at.
    pub log: u64,
    /// The epoch of the owner that writes.
    pub writer: u64,
}

/// An owner's append or open was refused: the log belongs to a later epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("fenced: the log is at epoch {log}, the writer at {writer}")]
pub struct Fenced {
    /// The log's epoch.
    pub log: u64,
    /// The writer's epoch.
    pub writer: u64,
}

/// Open a log at `e.log` as the owner of `e.writer`: the log's new epoch,
/// or `Fenced` if a later owner opened it already.
pub fn open_log(e: Epochs) -> Result<u64, Fenced> {
    if e.writer < e.log {
        return Err(Fenced {
            log: e.log,
            writer: e.writer,
        });
    }
    Ok(e.writer)
}

/// May the owner of `e.writer` append to a log at `e.log`? Only the owner
/// that opened it last.
pub fn check_append(e: Epochs) -> Result<(), Fenced> {
    if e.writer != e.log {
        return Err(Fenced {
            log: e.log,
            writer: e.writer,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(log: u64, writer: u64) -> Epochs {
        Epochs { log, writer }
    }

    #[test]
    fn a_new_owner_fences_the_old_one() {
        let log = open_log(e(0, 1)).unwrap();
        assert_eq!(check_append(e(log, 1)), Ok(()));
        let log = open_log(e(log, 2)).unwrap();
        assert_eq!(check_append(e(log, 1)), Err(Fenced { log: 2, writer: 1 }));
        assert_eq!(check_append(e(log, 2)), Ok(()));
    }

    #[test]
    fn an_old_owner_cannot_reopen_a_log_a_later_one_holds() {
        assert_eq!(open_log(e(3, 2)), Err(Fenced { log: 3, writer: 2 }));
        assert_eq!(open_log(e(3, 3)), Ok(3), "the owner may reopen its own log");
    }

    #[test]
    fn an_append_from_a_later_epoch_that_never_opened_the_log_is_refused() {
        assert_eq!(check_append(e(1, 2)), Err(Fenced { log: 1, writer: 2 }));
    }
}
