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

/// Picks a compaction: when L0 holds more than `l0_trigger` tables (or
/// `force` is set and L0 is not empty), all of L0 is merged with the
/// overlapping part of L1. Taking all of L0 keeps the invariant that every
/// L0 table is newer than everything in L1.
pub(crate) fn pick_compaction(
    levels: &[Vec<FileMeta>],
    l0_trigger: usize,
    force: bool,
) -> Option<CompactionTask> {
    let l0 = levels.first()?;
    if l0.is_empty() || (l0.len() <= l0_trigger && !force) {
        return None;
    }
    let start = l0.iter().map(|f| user_key(&f.smallest)).min()?;
    let end = l0.iter().map(|f| user_key(&f.largest)).max()?;
    let next_inputs: Vec<FileMeta> = levels
        .get(1)
        .map(|l1| {
            l1.iter()
                .filter(|f| f.overlaps(start, end))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    // The merged range may be wider than L0's once L1 files join.
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
        .skip(2)
        .flatten()
        .all(|f| !f.overlaps(start, end));
    Some(CompactionTask {
        level: 0,
        inputs: l0.clone(),
        next_inputs,
        bottommost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, internal_key};

    fn meta(number: u64, lo: &str, hi: &str) -> FileMeta {
        FileMeta {
            number,
            size_bytes: 1,
            smallest: internal_key(lo.as_bytes(), 1, ValueKind::Put),
            largest: internal_key(hi.as_bytes(), 1, ValueKind::Put),
        }
    }

    // Proves that L0 is left alone until it exceeds the trigger.
    #[test]
    fn no_compaction_until_l0_exceeds_trigger() {
        let levels = vec![vec![meta(3, "a", "b"), meta(2, "c", "d")], vec![]];
        assert_eq!(pick_compaction(&levels, 2, false), None);
        assert!(pick_compaction(&levels, 2, true).is_some());
        assert_eq!(pick_compaction(&[vec![], vec![]], 0, true), None);
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
        let task = pick_compaction(&levels, 1, false).expect("L0 over trigger");
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
            pick_compaction(&shallow, 1, false)
                .expect("task")
                .bottommost
        );
    }
}
