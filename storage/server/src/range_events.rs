//! Every range's events, for the cluster's event stream: each range this
//! node hosts, its leader changes as this node's replica sees them, and a
//! split as this node starts the new range's replica. Ranges started while
//! it is followed are followed from then on.

use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::{broadcast, watch};
use tokio_stream::StreamMap;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::groups::{Groups, SplitNotice};
use crate::rest::model::range_event::RangeEvent;

type Events = BroadcastStream<strata_raft::RaftEvent>;

pub struct RangeEvents {
    groups: Arc<Groups>,
    node_id: u64,
    added: watch::Receiver<usize>,
    splits: broadcast::Receiver<SplitNotice>,
    ranges: StreamMap<u64, Events>,
}

impl RangeEvents {
    /// Follows every range `groups` holds now or will start, as node
    /// `node_id` sees them.
    pub fn new(groups: Arc<Groups>, node_id: u64) -> Self {
        let mut added = groups.added();
        added.mark_changed();
        let splits = groups.split_notices();
        RangeEvents {
            groups,
            node_id,
            added,
            splits,
            ranges: StreamMap::new(),
        }
    }

    /// The next event; `None` once the node stops.
    pub async fn next(&mut self) -> Option<RangeEvent> {
        loop {
            tokio::select! {
                changed = self.added.changed() => {
                    changed.ok()?;
                    self.follow_new_ranges();
                }
                notice = self.splits.recv() => match notice {
                    Ok(s) => return Some(RangeEvent::from_split(self.node_id, &s)),
                    // A slow reader missed some: the status shows the ranges.
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                Some((_, event)) = self.ranges.next(), if !self.ranges.is_empty() => match event {
                    Ok(e) => {
                        if let Some(e) = RangeEvent::from_raft(&e) {
                            return Some(e);
                        }
                    }
                    Err(BroadcastStreamRecvError::Lagged(_)) => {}
                },
            }
        }
    }

    fn follow_new_ranges(&mut self) {
        for handle in self.groups.all() {
            let id = handle.status().group_id;
            if !self.ranges.contains_key(&id) {
                self.ranges
                    .insert(id, BroadcastStream::new(handle.subscribe()));
            }
        }
    }
}
