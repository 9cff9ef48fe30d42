//! Named crash and pause points of the coordinator and the brokers, where a
//! fault schedule can kill or freeze the server exactly, and the one
//! scripted point of a client's end-txn (the points a processor's workload
//! crashes at are [`super::client::ClientPoint`]). The steps do no I/O, so a
//! point is a place between two [`super::coordinator::TcAction`]s or
//! between a durable write and its reply; the simulator offers them.

use serde::{Deserialize, Serialize};

/// A point in a server's handling of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerPoint {
    /// Coordinator: OPEN is durable; the TxnId is not answered yet.
    AfterOpenLogged,
    /// Coordinator: a commit or abort request arrived; COMMITTING or
    /// ABORTING is not logged yet (not in [`ServerPoint::ALL`]; scripts
    /// and Pulsar's campaign stop there).
    BeforeEndingLogged,
    /// Coordinator: COMMITTING or ABORTING is durable; no marker is sent.
    AfterEndingLogged,
    /// Coordinator: the first participant acknowledged its marker; the
    /// others have not.
    AfterFirstMarker,
    /// Coordinator: every marker is acknowledged; COMMITTED or ABORTED is
    /// not logged.
    AfterAllMarkers,
    /// Coordinator: COMMITTED or ABORTED is durable; the client has no
    /// answer.
    AfterEndLogged,
    /// Broker: a transactional message is durable; the producer has no
    /// answer.
    AfterAppendLogged,
    /// Broker: a marker is durable in the partition or subscription; the
    /// coordinator has no acknowledgment.
    AfterMarkerLogged,
    /// Broker: a pending ack is durable; the consumer has no answer.
    AfterPendingAckLogged,
    /// Broker: a marker is durable in the partition's log; the
    /// transaction buffer (or the subscription) in memory does not know
    /// it yet (a script's point).
    BeforeMarkerApplied,
    /// Coordinator or broker: an append to a durable log is issued and not
    /// stored yet; a kill here loses it, a pause holds it in flight (a
    /// script's point).
    AppendInFlight,
    /// Client: its end-txn request (commit or abort) is on the wire; no
    /// answer has come (a script's point, armed on a `client-N`).
    AfterEndSent,
    /// Broker: a snapshot of a partition's transaction buffer is durable;
    /// the buffer in memory has not noted it (a script's point).
    AfterSnapshotWritten,
    /// Broker: it has taken over a partition (or the coordinator) and is
    /// recovering it: the snapshot (if any) is loaded, the log not yet
    /// replayed, requests are refused as not ready or queued (a script's
    /// point).
    DuringRecovery,
    /// Broker: a commit's mark is durable in the subscription's pending-ack
    /// log; the acknowledgments it commits are not yet appended to the
    /// cursor's log (a script's point).
    BeforeCursorAcked,
    /// Coordinator: its COMMITTING or ABORTING record is issued to the log
    /// and not stored yet (the one append of [`ServerPoint::AppendInFlight`]
    /// that decides a transaction; a kill loses it, a pause holds it).
    EndingInFlight,
}

impl ServerPoint {
    /// The points beside [`ServerPoint::ALL`], added for scripts; a
    /// campaign draws some of them too (its own lists of stops say which).
    pub const SCRIPTED: [ServerPoint; 8] = [
        ServerPoint::BeforeEndingLogged,
        ServerPoint::BeforeMarkerApplied,
        ServerPoint::AppendInFlight,
        ServerPoint::AfterEndSent,
        ServerPoint::AfterSnapshotWritten,
        ServerPoint::DuringRecovery,
        ServerPoint::BeforeCursorAcked,
        ServerPoint::EndingInFlight,
    ];

    /// Whether a client reaches it (else a broker does, for itself or for
    /// the coordinator it hosts).
    pub fn on_client(self) -> bool {
        self == ServerPoint::AfterEndSent
    }

    /// Every point of a transaction's life, in its order (a campaign
    /// draws from these and from three windows of its own).
    pub const ALL: [ServerPoint; 8] = [
        ServerPoint::AfterOpenLogged,
        ServerPoint::AfterEndingLogged,
        ServerPoint::AfterFirstMarker,
        ServerPoint::AfterAllMarkers,
        ServerPoint::AfterEndLogged,
        ServerPoint::AfterAppendLogged,
        ServerPoint::AfterMarkerLogged,
        ServerPoint::AfterPendingAckLogged,
    ];

    /// The point's name, as scenario files spell it.
    pub fn name(self) -> &'static str {
        match self {
            ServerPoint::AfterOpenLogged => "after_open_logged",
            ServerPoint::BeforeEndingLogged => "before_ending_logged",
            ServerPoint::AfterEndingLogged => "after_ending_logged",
            ServerPoint::AfterFirstMarker => "after_first_marker",
            ServerPoint::AfterAllMarkers => "after_all_markers",
            ServerPoint::AfterEndLogged => "after_end_logged",
            ServerPoint::AfterAppendLogged => "after_append_logged",
            ServerPoint::AfterMarkerLogged => "after_marker_logged",
            ServerPoint::AfterPendingAckLogged => "after_pending_ack_logged",
            ServerPoint::BeforeMarkerApplied => "before_marker_applied",
            ServerPoint::AppendInFlight => "append_in_flight",
            ServerPoint::AfterEndSent => "after_end_sent",
            ServerPoint::AfterSnapshotWritten => "after_snapshot_written",
            ServerPoint::DuringRecovery => "during_recovery",
            ServerPoint::BeforeCursorAcked => "before_cursor_acked",
            ServerPoint::EndingInFlight => "ending_in_flight",
        }
    }

    /// What recovery must do from here, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            ServerPoint::AfterOpenLogged => {
                "an OPEN transaction nobody knows of: the timeout aborts it"
            }
            ServerPoint::BeforeEndingLogged => {
                "the client asked to end, nothing is durable: the transaction stays OPEN until its timeout aborts it"
            }
            ServerPoint::AfterEndingLogged => {
                "the decision is durable, no participant knows: replay sends every marker"
            }
            ServerPoint::AfterFirstMarker => {
                "one partition shows the outcome, the others not yet: replay resends all"
            }
            ServerPoint::AfterAllMarkers => {
                "every participant is done: replay resends (ignored) and logs the end"
            }
            ServerPoint::AfterEndLogged => {
                "the transaction is over and forgotten: the client's retry gets not-found"
            }
            ServerPoint::AfterAppendLogged => {
                "the message is durable unanswered: the client aborts (sends are not retried)"
            }
            ServerPoint::AfterMarkerLogged => {
                "the marker is durable unacknowledged: the coordinator resends, ignored"
            }
            ServerPoint::AfterPendingAckLogged => {
                "the pending ack is durable unanswered: the client's retry is a no-op"
            }
            ServerPoint::BeforeMarkerApplied => {
                "the marker is durable, the buffer in memory is stale: recovery rebuilds it from the log"
            }
            ServerPoint::AppendInFlight => {
                "the append is issued, not stored: a death loses it, the sender times out"
            }
            ServerPoint::AfterEndSent => {
                "the client died with its end-txn on the wire: the coordinator finishes it alone"
            }
            ServerPoint::AfterSnapshotWritten => {
                "the snapshot is durable, memory has not noted it: recovery loads it and replays the log after it"
            }
            ServerPoint::DuringRecovery => {
                "a recovery is half done: a death starts it over, a pause leaves requests refused or queued until it ends"
            }
            ServerPoint::BeforeCursorAcked => {
                "the commit mark is in the pending-ack log, the cursor lacks its acks: recovery acknowledges them from the mark"
            }
            ServerPoint::EndingInFlight => {
                "the decision is issued to the coordinator's log, not stored: a death loses it, the transaction is still OPEN"
            }
        }
    }

    /// The point named `name`.
    pub fn from_name(name: &str) -> Option<ServerPoint> {
        ServerPoint::ALL
            .into_iter()
            .chain(ServerPoint::SCRIPTED)
            .find(|p| p.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::ServerPoint;

    #[test]
    fn names_round_trip() {
        for p in ServerPoint::ALL.into_iter().chain(ServerPoint::SCRIPTED) {
            assert_eq!(ServerPoint::from_name(p.name()), Some(p));
            assert_eq!(serde_json_name(p), p.name());
        }
        assert_eq!(ServerPoint::from_name("after_prewrite_primary"), None);
    }

    #[test]
    fn every_point_has_its_own_description() {
        let all = ServerPoint::ALL.iter().chain(&ServerPoint::SCRIPTED);
        let mut texts: Vec<&str> = all.map(|p| p.describe()).collect();
        texts.sort();
        texts.dedup();
        assert_eq!(
            texts.len(),
            ServerPoint::ALL.len() + ServerPoint::SCRIPTED.len()
        );
        assert!(texts.iter().all(|t| !t.is_empty()));
    }

    /// The serde name, without a JSON dependency: the Debug name in snake case.
    fn serde_json_name(p: ServerPoint) -> String {
        let mut out = String::new();
        for (i, c) in format!("{p:?}").chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    }
}
