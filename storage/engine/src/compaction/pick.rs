//! Chooses the next compaction from the level layout alone, so the policy is
//! testable without a disk.

use crate::key::user_key;
use crate::version::FileMeta;

/// Files to merge and where the result goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CompactionTask {
    /// Level the compaction starts from.
    pub(crate) level: usize,
    /// Files taken from `level`.
    pub(crate) inputs: Vec<FileMeta>,
    /// Files of `level + 1` overlapping the inputs' key range.
    pub(crate) next_inputs: Vec<FileMeta>,
    /// Whether no deeper level overlaps the range, so tombstones can go.
    pub(crate) bottommost: bool,
}

impl CompactionTask {
    pub(crate) fn output_level(&self) -> usize {
        self.level + 1
    }
}

/// The level layout's limits, from [`crate::Options`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LevelLimits {
    /// L0 is compacted once it holds more than this many tables.
    pub(crate) l0_trigger: usize,
    /// Target size of L1; each deeper level may hold `multiplier` times more.
    pub(crate) level_base_bytes: u64,
    pub(crate) multiplier: u64,
}

impl LevelLimits {
    /// Target size of `level` (1 or deeper).
    pub(crate) fn max_bytes(&self, level: usize) -> u64 {
        let mut bytes = self.level_base_bytes;
        for _ in 1..level {
            bytes = bytes.saturating_mul(self.multiplier);
        }
        bytes
    }
}

/// Picks the next compaction from the layout alone.
///
/// L0 comes first: when it holds more than `l0_trigger` tables (or `force`
/// is set and it is not empty) all of L0 is merged with the overlapping
/// part of L1. Taking all of L0 keeps the invariant that every L0 table is
/// newer than everything in L1. Otherwise the level from L1 down to the
/// second-deepest with the highest `size / max_bytes` score above 1
/// gives up one table: the one whose overlap with the next level is
/// smallest relative to its own size (RocksDB's "min overlapping ratio"),
/// which keeps write amplification low without state between picks.
pub(crate) fn pick_compaction(
    levels: &[Vec<FileMeta>],
    limits: &LevelLimits,
    force: bool,
) -> Option<CompactionTask> {
    let l0 = levels.first()?;
    if !l0.is_empty() && (l0.len() > limits.l0_trigger || force) {
        return Some(task_for(levels, 0, l0.clone()));
    }
    let last = levels.len().checked_sub(1)?;
    let mut best: Option<(usize, f64)> = None;
    for (level, files) in levels.iter().enumerate().take(last).skip(1) {
        let size: u64 = files.iter().map(|f| f.size_bytes).sum();
        let score = size as f64 / limits.max_bytes(level) as f64;
        if score > 1.0 && best.is_none_or(|(_, s)| score > s) {
            best = Some((level, score));
        }
    }
    let (level, _) = best?;
    let next = &levels[level + 1];
    let file = levels[level].iter().min_by(|a, b| {
        let ratio = |f: &FileMeta| {
            let overlap: u64 = next
                .iter()
                .filter(|n| n.overlaps(user_key(&f.smallest), user_key(&f.largest)))
                .map(|n| n.size_bytes)
                .sum();
            overlap as f64 / f.size_bytes.max(1) as f64
        };
        ratio(a).total_cmp(&ratio(b)).then(a.number.cmp(&b.number))
    })?;
    Some(task_for(levels, level, vec![file.clone()]))
}

/// The task merging `inputs` (from `level`) with what overlaps them below.
fn task_for(levels: &[Vec<FileMeta>], level: usize, inputs: Vec<FileMeta>) -> CompactionTask {
    let start = inputs.iter().map(|f| user_key(&f.smallest)).min();
    let end = inputs.iter().map(|f| user_key(&f.largest)).max();
    let (Some(start), Some(end)) = (start, end) else {
        unreachable!("a compaction has at least one input");
    };
    let next_inputs: Vec<FileMeta> = levels
        .get(level + 1)
        .map(|next| {
            next.iter()
                .filter(|f| f.overlaps(start, end))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    // The merged range may be wider than the inputs' once the next level's
    // files join.
    let start = next_inputs
        .iter()
        .map(|f| user_key(&f.smallest))
        .fold(start, std::cmp::min);
    let end = next_inputs
        .iter()
        .map(|f| user_key(&f.largest))
        .fold(end, std::cmp::max);
    let bottommost = levels
        .iter()
        .skip(level + 2)
        .flatten()
        .all(|f| !f.overlaps(start, end));
    CompactionTask {
        level,
        inputs,
        next_inputs,
        bottommost,
    }
}

impl CompactionTask {
    /// A single table with nothing below it to merge with can move down a
    /// level by a manifest edit alone, without being rewritten. Not from L0
    /// (L0 is always compacted whole) and not when tombstones could go.
    pub(crate) fn is_trivial_move(&self) -> bool {
        self.level > 0 && self.inputs.len() == 1 && self.next_inputs.is_empty() && !self.bottommost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, internal_key};

    const LIMITS: LevelLimits = LevelLimits {
        l0_trigger: 1,
        level_base_bytes: 100,
        multiplier: 10,
    };

    fn limits(l0_trigger: usize) -> LevelLimits {
        LevelLimits {
            l0_trigger,
            ..LIMITS
        }
    }

    fn meta(number: u64, lo: &str, hi: &str) -> FileMeta {
        sized(number, lo, hi, 1)
    }

    fn sized(number: u64, lo: &str, hi: &str, size_bytes: u64) -> FileMeta {
        FileMeta {
            number,
            size_bytes,
            smallest: internal_key(lo.as_bytes(), 1, ValueKind::Put),
            largest: internal_key(hi.as_bytes(), 1, ValueKind::Put),
        }
    }

    // Proves that L0 is left alone until it exceeds the trigger.
    #[test]
    fn no_compaction_until_l0_exceeds_trigger() {
        let levels = vec![vec![meta(3, "a", "b"), meta(2, "c", "d")], vec![]];
        assert_eq!(pick_compaction(&levels, &limits(2), false), None);
        assert!(pick_compaction(&levels, &limits(2), true).is_some());
        assert_eq!(pick_compaction(&[vec![], vec![]], &limits(0), true), None);
    }

    // Proves that all of L0 and exactly the overlapping L1 files are chosen,
    // and that deeper overlapping data keeps tombstones alive.
    #[test]
    fn picks_all_l0_and_overlapping_l1() {
        let levels = vec![
            vec![meta(9, "c", "f"), meta(8, "e", "h")],
            vec![
                meta(1, "a", "b"),
                meta(2, "d", "e"),
                meta(3, "g", "k"),
                meta(4, "m", "z"),
            ],
            vec![meta(5, "j", "j")],
        ];
        let task = pick_compaction(&levels, &LIMITS, false).expect("L0 over trigger");
        assert_eq!(task.inputs.len(), 2);
        assert_eq!(
            task.next_inputs
                .iter()
                .map(|f| f.number)
                .collect::<Vec<_>>(),
            vec![2, 3]
        );
        assert!(
            !task.bottommost,
            "L2 file j overlaps the widened range c..k"
        );
        assert_eq!(task.output_level(), 1);
        let shallow = vec![levels[0].clone(), levels[1].clone()];
        assert!(
            pick_compaction(&shallow, &LIMITS, false)
                .expect("task")
                .bottommost
        );
    }

    // Proves that a level over its target size gives up the table with the
    // least overlap below it, and that the most over-full level goes first.
    #[test]
    fn picks_level_by_size_score_and_least_overlapping_file() {
        let levels = vec![
            vec![],
            // L1: 150 bytes against a 100-byte target (score 1.5).
            vec![sized(1, "a", "c", 75), sized(2, "d", "f", 75)],
            // L2: 500 bytes against 1000 (score 0.5).
            vec![sized(3, "a", "b", 400), sized(4, "e", "e", 100)],
            vec![],
        ];
        let task = pick_compaction(&levels, &LIMITS, false).expect("L1 is over its target");
        assert_eq!(task.level, 1);
        assert_eq!(
            task.inputs.iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![2]
        );
        assert_eq!(
            task.next_inputs
                .iter()
                .map(|f| f.number)
                .collect::<Vec<_>>(),
            vec![4]
        );
        assert!(task.bottommost);
        assert!(!task.is_trivial_move());

        // L2 at 20x its target beats L1 at 1.5x.
        let mut deeper = levels.clone();
        deeper[2].push(sized(5, "x", "z", 19_500));
        let task = pick_compaction(&deeper, &LIMITS, false).expect("L2 is over its target");
        assert_eq!((task.level, task.output_level()), (2, 3));
        // Nothing below overlaps any L2 table: the lowest number wins the tie.
        assert_eq!(
            task.inputs.iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![3]
        );
        assert!(task.next_inputs.is_empty());
    }

    // Proves that nothing is picked while every level is within its target,
    // that the deepest level is never compacted by size, and the trivial-move rule.
    #[test]
    fn levels_within_target_and_last_level_are_left_alone() {
        let calm = vec![
            vec![],
            vec![sized(1, "a", "c", 100)],
            vec![sized(2, "a", "z", 999)],
        ];
        assert_eq!(pick_compaction(&calm, &LIMITS, false), None);
        let bottom_full = vec![vec![], vec![], vec![sized(2, "a", "z", 1_000_000)]];
        assert_eq!(pick_compaction(&bottom_full, &LIMITS, false), None);
        let movable = vec![
            vec![],
            vec![sized(1, "a", "c", 150)],
            vec![sized(2, "x", "z", 1)],
            vec![sized(3, "a", "b", 1)],
        ];
        let task = pick_compaction(&movable, &LIMITS, false).expect("L1 is over its target");
        assert!(task.is_trivial_move(), "{task:?}");
        assert_eq!(LIMITS.max_bytes(1), 100);
        assert_eq!(LIMITS.max_bytes(3), 10_000);
    }
}
