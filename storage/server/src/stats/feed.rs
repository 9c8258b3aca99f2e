//! The `stats` events of `/v1/cluster/events`: every member's stats,
//! gathered once a second for all the streams of this node together, and
//! only while at least one stream listens (a node nobody watches asks its
//! peers for nothing). A leader change seen here brings the next gathering
//! forward, so that every member's account of the election (their
//! `raft_activity`) reaches the streams within a fraction of a second.

use std::sync::Arc;
use std::time::Duration;

use strata_raft::RaftEventKind;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::{StatsSource, gather};
use crate::core::Core;
use crate::rest::model::stats::ClusterStats;

/// How long after a leader change the gathering runs: long enough for the
/// other members to have learned of the new leader too.
const AFTER_LEADER_CHANGE: Duration = Duration::from_millis(150);

/// What the streams subscribe to: the latest gathered stats, if any.
pub type StatsFeed = watch::Sender<Option<Arc<ClusterStats>>>;

/// Starts gathering every `period` while the feed has subscribers; the
/// task ends once `stopping` turns true (or its sender is gone).
pub fn spawn(
    core: Arc<Core>,
    source: Arc<StatsSource>,
    period: Duration,
    mut stopping: watch::Receiver<bool>,
) -> (StatsFeed, JoinHandle<()>) {
    let (tx, _) = watch::channel(None);
    let feed = tx.clone();
    let mut raft = core.peer().subscribe();
    let task = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if *stopping.borrow_and_update() {
                break;
            }
            let elected = tokio::select! {
                _ = ticker.tick() => false,
                event = raft.recv() => match event {
                    Ok(e) if e.kind == RaftEventKind::LeaderChanged && e.leader_id != 0 => true,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => break,
                },
                changed = stopping.changed() => match changed {
                    Ok(()) => continue,
                    Err(_) => break,
                },
            };
            if elected {
                tokio::time::sleep(AFTER_LEADER_CHANGE).await;
                // The next regular gathering is a full period away.
                ticker.reset();
            }
            if tx.receiver_count() == 0 {
                continue;
            }
            let stats = gather(&core, &source).await;
            tx.send_replace(Some(Arc::new(stats)));
        }
    });
    (feed, task)
}
