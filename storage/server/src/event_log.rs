//! One clear log line for each event an operator looks for: leader changes,
//! elections, membership changes and snapshots sent (from the raft peer's
//! events), compactions and write stalls (from the engine's). A snapshot
//! received (in `snapshot_receive`), a snapshot installed and a storage
//! failure are logged where they happen, and not again here.

use std::sync::Arc;
use std::time::Duration;

use strata_engine::{Engine, EngineEvent};
use strata_raft::{PeerHandle, RaftEvent, RaftEventKind};
use tokio::sync::broadcast::error::RecvError;

use crate::stats::activity::ActivityLog;
use crate::stats::raft_history::RaftHistory;

/// Engine events buffered for the logger; the engine drops (and counts)
/// events beyond this rather than wait.
const ENGINE_EVENTS: usize = 1024;

/// Logs the peer's and the engine's events until they stop: the raft task
/// ends when the peer is dropped, the engine thread when the engine is.
/// Each engine event is also recorded in `activity`, and each raft event in
/// `history`, for the stats.
pub fn spawn(
    peer: &PeerHandle,
    engine: &Arc<Engine>,
    activity: Arc<ActivityLog>,
    history: Arc<RaftHistory>,
) -> anyhow::Result<()> {
    let mut raft = peer.subscribe();
    tokio::spawn(async move {
        loop {
            match raft.recv().await {
                Ok(e) => {
                    log_raft(&e);
                    history.record(&e);
                }
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "raft events came faster than they were logged")
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
    let events = engine.subscribe(ENGINE_EVENTS);
    std::thread::Builder::new()
        .name("engine-events".into())
        .spawn(move || {
            for e in events {
                log_engine(&e);
                activity.record(&e);
            }
        })?;
    Ok(())
}

fn log_raft(e: &RaftEvent) {
    match e.kind {
        RaftEventKind::LeaderChanged if e.leader_id == 0 => {
            tracing::info!(term = e.term, "leader lost")
        }
        RaftEventKind::LeaderChanged => tracing::info!(
            leader = e.leader_id,
            term = e.term,
            role = e.role.as_str(),
            leaderless_ms = e.duration_ms,
            "leader changed"
        ),
        RaftEventKind::ElectionStarted => tracing::info!(
            term = e.term,
            reason = e.election.map_or("", |s| s.reason.as_str()),
            pre_vote = e.election.is_some_and(|s| s.pre_vote),
            "election started"
        ),
        RaftEventKind::MembershipChanged => {
            tracing::info!(term = e.term, members = %e.detail, "membership changed")
        }
        RaftEventKind::SnapshotSent => tracing::info!(detail = %e.detail, "snapshot sent"),
        RaftEventKind::RoleChanged
        | RaftEventKind::SnapshotReceived
        | RaftEventKind::SnapshotInstalled
        | RaftEventKind::StorageFailed => {}
    }
}

fn log_engine(e: &EngineEvent) {
    match e {
        EngineEvent::CompactionFinished {
            level,
            output_level,
            files_in,
            bytes_in,
            files_out,
            bytes_out,
            trivial_move,
            duration,
        } => tracing::info!(
            level,
            output_level,
            files_in,
            bytes_in,
            files_out,
            bytes_out,
            trivial_move,
            ms = millis(*duration),
            "compaction finished"
        ),
        EngineEvent::WriteStalled { stopped, duration } => tracing::warn!(
            stopped,
            ms = millis(*duration),
            "write stalled: the engine's background work is behind"
        ),
        EngineEvent::FlushStarted { .. }
        | EngineEvent::FlushFinished { .. }
        | EngineEvent::CompactionStarted { .. } => {}
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Mutex;

    use strata_raft::Role;

    use super::*;

    /// The lines `f` logs, as the text format writes them.
    fn lines(f: impl FnOnce()) -> Vec<String> {
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl Write for Sink {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        text.lines().map(str::to_string).collect()
    }

    fn event(kind: RaftEventKind, leader_id: u64, detail: &str) -> RaftEvent {
        RaftEvent {
            kind,
            node_id: 1,
            group_id: 1,
            term: 7,
            leader_id,
            role: Role::Follower,
            at_ms: 0,
            duration_ms: 120,
            detail: detail.into(),
            election: None,
        }
    }

    // Proves that each event an operator looks for gives exactly one line
    // saying what happened, and that events logged elsewhere give none.
    #[test]
    fn each_event_logs_one_clear_line_or_none() {
        let cases = [
            (
                event(RaftEventKind::LeaderChanged, 2, ""),
                Some("leader changed leader=2 term=7"),
            ),
            (
                event(RaftEventKind::LeaderChanged, 0, ""),
                Some("leader lost term=7"),
            ),
            (
                event(RaftEventKind::ElectionStarted, 0, ""),
                Some("election started term=7"),
            ),
            (
                event(RaftEventKind::MembershipChanged, 1, "voters [1, 2, 4]"),
                Some("membership changed term=7 members=voters [1, 2, 4]"),
            ),
            (event(RaftEventKind::SnapshotReceived, 1, "index 9"), None),
            (event(RaftEventKind::SnapshotInstalled, 1, "index 9"), None),
            (event(RaftEventKind::StorageFailed, 1, "disk"), None),
            (
                event(RaftEventKind::RoleChanged, 1, "follower -> leader"),
                None,
            ),
        ];
        for (e, want) in cases {
            let got = lines(|| log_raft(&e));
            match want {
                Some(text) => {
                    assert_eq!(got.len(), 1, "{e:?}: {got:?}");
                    assert!(got[0].contains(text), "{e:?}: {got:?}");
                }
                None => assert!(got.is_empty(), "{e:?}: {got:?}"),
            }
        }
        let compaction = EngineEvent::CompactionFinished {
            level: 0,
            output_level: 1,
            files_in: 4,
            bytes_in: 4000,
            files_out: 1,
            bytes_out: 3000,
            trivial_move: false,
            duration: Duration::from_millis(12),
        };
        let got = lines(|| log_engine(&compaction));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].contains("bytes_in=4000") && got[0].contains("compaction finished"));
        let stall = EngineEvent::WriteStalled {
            stopped: true,
            duration: Duration::from_millis(30),
        };
        let got = lines(|| log_engine(&stall));
        assert!(
            got.len() == 1 && got[0].contains("WARN") && got[0].contains("ms=30"),
            "{got:?}"
        );
        let flush = EngineEvent::FlushStarted { memtable_bytes: 1 };
        assert!(lines(|| log_engine(&flush)).is_empty());
    }
}
