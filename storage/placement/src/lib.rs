//! Where a cluster of many ranges puts its replicas and its leaders: the
//! placement loop's decisions, as a pure function of what the cluster looks
//! like ([`ClusterView`]) to the actions that would even it out
//! ([`Action`]), a bounded number per round.
//!
//! A round, in order of urgency:
//! 1. **Repair**: a range with a replica on a node that is gone, or with
//!    fewer replicas than the replication factor, gets a replica on the
//!    live node holding the fewest, and loses the one on the gone node.
//! 2. **Replicas**: while a node holds more replicas than the mean allows
//!    (`tolerance`), one moves to the node that holds the fewest and is not
//!    in that range yet (added there first, removed here after).
//! 3. **Leaders**: while a node leads more ranges than the mean allows,
//!    one leadership moves to another replica of that range on a node that
//!    leads fewer.
//!
//! Moves go from the most loaded to the least loaded, so a node joining
//! draws only its share (about `replicas / nodes`) and a node leaving moves
//! only what it held: bounded data movement. `sim` applies actions to a
//! view as a cluster would, for tests and for the figures in
//! docs/benchmarks.md.

mod action;
mod plan;
pub mod sim;
mod view;

pub use action::Action;
pub use plan::Planner;
pub use view::{ClusterView, RangeState};
