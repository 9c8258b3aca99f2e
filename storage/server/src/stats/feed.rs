//! The `stats` events of `/v1/cluster/events`: every member's stats,
//! gathered once a second for all the streams of this node together, and
//! only while at least one stream listens (a node nobody watches asks its
//! peers for nothing).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{StatsSource, gather};
use crate::core::Core;
use crate::rest::model::stats::ClusterStats;

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
    let task = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stopping.wait_for(|stop| *stop) => break,
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
