//! Fencing: every durable log (the transaction log, a partition's log and
//! its subscriptions' logs) records the epoch of the owner allowed to
//! append. A new owner opens the log at its own epoch, which fences every
//! older owner (BookKeeper: opening a ledger for recovery fences it, and
//! the old writer's next add fails). An append made at another epoch is
//! refused and must not land; the refused owner stops serving the
//! resource.

use serde::{Deserialize, Serialize};

/// An owner's append or open was refused: the log belongs to a later epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("fenced: the log is at epoch {log}, the writer at {writer}")]
pub struct Fenced {
    /// The log's epoch.
    pub log: u64,
    /// The writer's epoch.
    pub writer: u64,
}

/// Open a log whose epoch is `log_epoch` as the owner of `epoch`: the
/// log's new epoch, or `Fenced` if a later owner opened it already.
pub fn open_log(log_epoch: u64, epoch: u64) -> Result<u64, Fenced> {
    if epoch < log_epoch {
        return Err(Fenced {
            log: log_epoch,
            writer: epoch,
        });
    }
    Ok(epoch)
}

/// May the owner of `epoch` append to a log at `log_epoch`? Only the owner
/// that opened it last.
pub fn check_append(log_epoch: u64, epoch: u64) -> Result<(), Fenced> {
    if epoch != log_epoch {
        return Err(Fenced {
            log: log_epoch,
            writer: epoch,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_owner_fences_the_old_one() {
        let log = open_log(0, 1).unwrap();
        assert_eq!(check_append(log, 1), Ok(()));
        let log = open_log(log, 2).unwrap();
        assert_eq!(check_append(log, 1), Err(Fenced { log: 2, writer: 1 }));
        assert_eq!(check_append(log, 2), Ok(()));
    }

    #[test]
    fn an_old_owner_cannot_reopen_a_log_a_later_one_holds() {
        assert_eq!(open_log(3, 2), Err(Fenced { log: 3, writer: 2 }));
        assert_eq!(open_log(3, 3), Ok(3), "the owner may reopen its own log");
    }

    #[test]
    fn an_append_from_a_later_epoch_that_never_opened_the_log_is_refused() {
        assert_eq!(check_append(1, 2), Err(Fenced { log: 1, writer: 2 }));
    }
}
