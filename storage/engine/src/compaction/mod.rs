//! Compaction: choosing what to merge (a pure function of the level layout)
//! and merging it.

mod pick;
mod rate_limit;
mod run;

pub(crate) use pick::{CompactionTask, LevelLimits, pick_compaction};
pub(crate) use rate_limit::RateLimiter;
pub(crate) use run::write_compaction_outputs;
