//! Compaction: choosing what to merge (a pure function of the level layout)
//! and merging it.

mod pick;
mod run;

pub(crate) use pick::{CompactionTask, pick_compaction};
pub(crate) use run::write_compaction_outputs;
