//! Crash tests of the raft log on the fault-injecting file system: what
//! survives power loss at every byte of every write, and damage that is
//! reported rather than skipped.

mod common;

use std::path::Path;

use common::{DIR, View, entries, hard_state, open, segments, view};
use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, SnapshotMetadata};
use strata_fs::FaultFs;
use strata_raft::LogError;
use strata_raft::log::RaftLogStore;
use strata_raft::log::record;
use strata_raft::log::store::DEFAULT_ENTRIES_RECORD_BYTES;

/// One change to the log, as the driver makes them.
#[derive(Clone, Debug)]
enum Op {
    /// Entries from `from` to `to` of `term` (replacing any from `from` on).
    Append {
        from: u64,
        to: u64,
        term: u64,
    },
    /// A new hard state; the term or vote changes, so it is written at once.
    HardState {
        term: u64,
        vote: u64,
        commit: u64,
    },
    Voters(Vec<u64>),
    /// Log compaction through an index (persists by itself and deletes
    /// sealed segments that only held discarded entries).
    Compact(u64),
    /// A snapshot installed at an index and term.
    Snapshot {
        index: u64,
        term: u64,
    },
}

impl Op {
    /// Applies the op to `store` and returns the log as recovery must see
    /// it after each record the op frames (its entries bounded to
    /// `max_entries_record_bytes` per record).
    fn apply_and_view(
        &self,
        store: &mut RaftLogStore,
        max_entries_record_bytes: usize,
    ) -> Vec<View> {
        let before = view(store);
        self.apply(store);
        let after = view(store);
        match self {
            // The snapshot record, then the hard state it raised.
            Op::Snapshot { .. } => vec![after.clone(), after],
            Op::Append { from, to, term } => {
                let all = entries(*from, *to, *term);
                let mut views: Vec<View> = record_prefixes(&all, max_entries_record_bytes)
                    .into_iter()
                    .map(|n| appended(&before, &all[..n]))
                    .collect();
                views.push(after);
                views
            }
            _ => vec![after],
        }
    }

    fn apply(&self, store: &mut RaftLogStore) {
        match self {
            Op::Append { from, to, term } => store.append(&entries(*from, *to, *term)),
            Op::HardState { term, vote, commit } => {
                store.set_hard_state(&hard_state(*term, *vote, *commit));
            }
            Op::Voters(voters) => {
                let mut cs = ConfState::default();
                cs.set_voters(voters.clone());
                store.set_conf_state(&cs);
            }
            Op::Compact(index) => {
                store.compact(*index);
                store.persist().expect("compact");
            }
            Op::Snapshot { index, term } => {
                let mut meta = SnapshotMetadata {
                    index: *index,
                    term: *term,
                    ..Default::default()
                };
                meta.mut_conf_state().set_voters(vec![1, 2, 3, 4]);
                store.apply_snapshot(&meta);
            }
        }
    }
}

/// How many of `entries` the records of an append hold together, after
/// each record but the last: a record takes entries (each its encoding
/// and a 4-byte length) while they fit in `max_body_bytes`, and at least
/// one.
fn record_prefixes(entries: &[Entry], max_body_bytes: usize) -> Vec<usize> {
    let mut prefixes = Vec::new();
    let mut body = 0;
    for (i, e) in entries.iter().enumerate() {
        let one = 4 + e.compute_size() as usize;
        if body > 0 && body + one > max_body_bytes {
            prefixes.push(i);
            body = 0;
        }
        body += one;
    }
    prefixes
}

/// `before` with `prefix` appended (replacing any entries from its first
/// index on).
fn appended(before: &View, prefix: &[Entry]) -> View {
    let first = prefix[0].index;
    let mut v = before.clone();
    v.entries.retain(|(index, _, _)| *index < first);
    v.entries.extend(prefix.iter().map(|e| {
        (
            e.index,
            e.term,
            String::from_utf8_lossy(&e.data).into_owned(),
        )
    }));
    v.last_index = prefix[prefix.len() - 1].index;
    v
}

/// A history touching every record kind: appends, a conflicting append,
/// hard states (some in the same persist as the entries they commit, as a
/// Ready writes them), a configuration, compactions and a snapshot. Each
/// inner list is persisted with one write and one fsync.
fn history() -> Vec<Vec<Op>> {
    use Op::*;
    vec![
        vec![HardState {
            term: 1,
            vote: 1,
            commit: 0,
        }],
        vec![Append {
            from: 1,
            to: 3,
            term: 1,
        }],
        vec![
            Append {
                from: 4,
                to: 6,
                term: 1,
            },
            HardState {
                term: 1,
                vote: 2,
                commit: 6,
            },
        ],
        vec![Voters(vec![1, 2, 3])],
        vec![Compact(3)],
        vec![
            Append {
                from: 7,
                to: 9,
                term: 2,
            },
            HardState {
                term: 2,
                vote: 2,
                commit: 9,
            },
        ],
        // A new leader replaces 8 and 9.
        vec![Append {
            from: 8,
            to: 12,
            term: 3,
        }],
        vec![HardState {
            term: 3,
            vote: 3,
            commit: 12,
        }],
        vec![Compact(10)],
        vec![Snapshot { index: 20, term: 3 }],
        vec![Append {
            from: 21,
            to: 23,
            term: 3,
        }],
        vec![
            Append {
                from: 24,
                to: 26,
                term: 4,
            },
            HardState {
                term: 4,
                vote: 1,
                commit: 26,
            },
        ],
        vec![Compact(24)],
    ]
}

/// What a history's run observed, for checks beyond the cuts.
#[derive(Default)]
struct Run {
    cuts: usize,
    rolled_steps: usize,
    final_fs: Option<FaultFs>,
    final_view: Option<View>,
}

/// A history whose appends each take several records when a record holds
/// at most [`SMALL_RECORD_BYTES`] of entries: a long run, a conflicting
/// one replacing entries across record boundaries together with the hard
/// state committing it, and a compaction.
fn split_history() -> Vec<Vec<Op>> {
    use Op::*;
    vec![
        vec![HardState {
            term: 1,
            vote: 1,
            commit: 0,
        }],
        vec![Append {
            from: 1,
            to: 8,
            term: 1,
        }],
        vec![
            Append {
                from: 3,
                to: 10,
                term: 2,
            },
            HardState {
                term: 2,
                vote: 2,
                commit: 10,
            },
        ],
        vec![Compact(4)],
        vec![Append {
            from: 11,
            to: 16,
            term: 2,
        }],
    ]
}

/// An entries record bound that splits every append of
/// [`split_history`]: about two of its entries per record.
const SMALL_RECORD_BYTES: usize = 80;

/// Runs the history on a log with segments of `max_segment_bytes`. Before
/// each persist completes, a crash may keep any prefix of the bytes it
/// wrote (all earlier bytes were synced); for every such prefix, recovery
/// must yield exactly the log as of the last complete record: the state
/// before the persist, or after the op that framed that record, never
/// anything else. The log must also stay durable: after the repair
/// (which cuts the torn tail and fsyncs), a second crash changes nothing.
fn run_history(
    max_segment_bytes: u64,
    max_entries_record_bytes: usize,
    history: Vec<Vec<Op>>,
) -> Run {
    let fs = FaultFs::new();
    let mut store = open(&fs, max_segment_bytes).expect("open");
    store.set_max_entries_record_bytes(max_entries_record_bytes);
    let mut run = Run::default();
    for (step, ops) in history.into_iter().enumerate() {
        let before_fs = fs.durable_copy();
        let before_files = segments(&before_fs);
        let before_view = view(&store);
        assert_eq!(
            view(&open(&before_fs, max_segment_bytes).expect("reopen")),
            before_view,
            "step {step}: the synced log reopens as it was"
        );
        // The log after each record the step frames.
        let mut after_record = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            assert!(
                !matches!(op, Op::Compact(_)) || i + 1 == ops.len(),
                "a compaction persists: it ends its step"
            );
            after_record.extend(op.apply_and_view(&mut store, max_entries_record_bytes));
        }
        store.persist().expect("persist");
        let after_view = view(&store);

        let after_files = segments(&fs.durable_copy());
        let (newest, written) = after_files.iter().next_back().expect("a segment");
        let old = before_files.get(newest).cloned().unwrap_or_default();
        assert!(written.starts_with(&old), "step {step}: synced bytes kept");
        let rolled = !before_files.contains_key(newest);
        for (name, bytes) in &before_files {
            if let Some(now) = after_files.get(name).filter(|_| name != newest) {
                assert_eq!(
                    now, bytes,
                    "step {step}: only the newest segment is written"
                );
            }
        }
        // Record ends of what the step wrote, in file offsets.
        let ends: Vec<usize> = record::reader(written, false)
            .map(|r| r.expect("intact").end() as usize)
            .filter(|&end| end > old.len())
            .collect();
        let header = ends.len() - after_record.len();
        assert!(
            if rolled {
                (2..=3).contains(&header)
            } else {
                header == 0
            },
            "step {step}: {header} header records, rolled {rolled}"
        );
        run.rolled_steps += usize::from(rolled);

        let path = Path::new(DIR).join(newest);
        // Each cut twice: the file ending there, and the same followed by
        // zeros, as where the segment was allocated ahead (the appends
        // after the cut written into allocated space that never reached
        // the disk). Zeros complete a record whose missing bytes were
        // zeros: its bytes are all there, and it counts as written.
        let mut states = vec![(None, before_fs.clone())];
        for cut in old.len()..=written.len() {
            for allocated in [false, true] {
                let crashed = before_fs.durable_copy();
                let mut bytes = written[..cut].to_vec();
                let mut reaches = cut;
                if allocated {
                    // A few zeros past what was written stand for the
                    // rest of the allocated space.
                    bytes.resize(written.len() + 64, 0);
                    reaches += written[cut..].iter().take_while(|&&b| b == 0).count();
                }
                crashed.overwrite(&path, bytes);
                states.push((Some(reaches), crashed));
            }
        }
        for (cut, crashed) in states {
            // The first state is a crash before a rolled segment's
            // directory entry was synced (or before anything was written).
            let complete = cut.map_or(0, |c| ends.iter().filter(|&&e| e <= c).count());
            let expected = if complete <= header {
                &before_view
            } else {
                &after_record[complete - header - 1]
            };
            let recovered = open(&crashed, max_segment_bytes).unwrap_or_else(|e| {
                panic!("step {step} cut {cut:?}: recovery failed: {e}");
            });
            assert_eq!(
                &view(&recovered),
                expected,
                "step {step} (rolled {rolled}), cut {cut:?} of {}",
                written.len()
            );
            let v = view(&recovered);
            assert!(
                v.hard_state.2 <= v.last_index,
                "step {step} cut {cut:?}: commit {} beyond the last index {}; raft would refuse to start",
                v.hard_state.2,
                v.last_index
            );
            drop(recovered);
            // The repair is durable: another crash brings back nothing torn.
            let again = crashed.crash();
            if let Some(cut) = cut {
                let valid = ends
                    .iter()
                    .copied()
                    .filter(|&e| e <= cut)
                    .max()
                    .unwrap_or(old.len());
                assert_eq!(
                    again.contents(&path).map(|b| b.len()),
                    Some(valid),
                    "step {step} cut {cut}: the torn tail was cut and fsynced"
                );
            }
            assert_eq!(
                view(&open(&again, max_segment_bytes).expect("reopen")),
                *expected
            );
            run.cuts += 1;
        }
        assert_eq!(after_record.last(), Some(&after_view));
    }
    run.final_view = Some(view(&store));
    run.final_fs = Some(fs);
    run
}

// Proves that a crash at every byte offset of every write, across appends,
// conflicting appends, hard states, configuration, compactions (with
// segment deletion) and a snapshot, recovers exactly the log as of the
// last complete record: never more than was written, never less than was
// synced; with segments large enough never to roll.
#[test]
fn crash_at_every_offset_recovers_synced_prefix_in_one_segment() {
    let run = run_history(1 << 20, DEFAULT_ENTRIES_RECORD_BYTES, history());
    eprintln!("one segment: {} crash states recovered", run.cuts);
    assert_eq!(run.rolled_steps, 0);
    assert!(run.cuts > 800, "{} cuts", run.cuts);
}

// Proves the same when segments roll often, so that a crash also falls
// inside a new segment's header records and between a roll and the first
// records after it, and compactions delete sealed segments.
#[test]
fn crash_at_every_offset_recovers_synced_prefix_across_rolls() {
    for max_segment_bytes in [120, 200, 300] {
        let run = run_history(max_segment_bytes, DEFAULT_ENTRIES_RECORD_BYTES, history());
        eprintln!(
            "segments of {max_segment_bytes} bytes: {} crash states recovered, {} steps rolled",
            run.cuts, run.rolled_steps
        );
        assert!(
            run.rolled_steps >= 3,
            "{max_segment_bytes}: {} rolls",
            run.rolled_steps
        );
        let fs = run.final_fs.expect("ran");
        let reopened = open(&fs.crash(), max_segment_bytes).expect("reopen");
        assert_eq!(Some(view(&reopened)), run.final_view);
    }
}

// Proves that a Ready whose entries take several records (each bounded in
// bytes) recovers, after a crash at every byte offset, to the log as of
// its last complete record: a prefix of the Ready's entries, with any
// entries they replaced gone only as far as that prefix reaches; in one
// segment and when segments roll.
#[test]
fn crash_inside_a_ready_split_over_records_keeps_a_prefix_of_it() {
    assert_eq!(
        record_prefixes(&entries(1, 8, 1), SMALL_RECORD_BYTES),
        vec![2, 4, 6],
        "eight entries take four records"
    );
    for max_segment_bytes in [1 << 20, 200] {
        let run = run_history(max_segment_bytes, SMALL_RECORD_BYTES, split_history());
        eprintln!(
            "records of {SMALL_RECORD_BYTES} bytes, segments of {max_segment_bytes}: \
             {} crash states recovered, {} steps rolled",
            run.cuts, run.rolled_steps
        );
        assert!(run.cuts > 400, "{} cuts", run.cuts);
        let fs = run.final_fs.expect("ran");
        let reopened = open(&fs.crash(), max_segment_bytes).expect("reopen");
        assert_eq!(Some(view(&reopened)), run.final_view);
    }
}

/// Opens the newest segment with byte `at` flipped.
fn open_with_flip(
    fs: &FaultFs,
    name: &str,
    at: usize,
    max_segment_bytes: u64,
) -> Result<RaftLogStore, LogError> {
    let copy = fs.durable_copy();
    let path = Path::new(DIR).join(name);
    let mut bytes = copy.contents(&path).expect("segment");
    bytes[at] ^= 0x01;
    copy.overwrite(&path, bytes);
    open(&copy, max_segment_bytes)
}

// Proves that damage anywhere but in the newest segment's last record is
// reported as corruption, never skipped: a flipped bit at every byte of
// every segment. In the last record it is indistinguishable from a torn
// write, and recovery keeps the records before it. The newest segment
// holds entries records between its header and its last record, whose
// loss would leave a consistent log: only the framing (an intact record
// after the damage) tells that damage from a torn tail.
#[test]
fn damage_before_the_last_record_is_corruption_at_every_offset() {
    let max_segment_bytes = 200;
    let run = run_history(max_segment_bytes, DEFAULT_ENTRIES_RECORD_BYTES, history());
    let fs = run.final_fs.expect("ran").crash();
    // End with entries, one record each: dropping the last is a legitimate
    // torn tail, whereas the history's last record, a compaction whose
    // discarded segments are already deleted, cannot be lost without
    // corrupting the log.
    let mut store = open(&fs, max_segment_bytes).expect("open");
    for index in 27..=29 {
        store.append(&entries(index, index, 4));
    }
    store.persist().expect("persist");
    drop(store);
    let files = segments(&fs);
    assert!(files.len() >= 2, "sealed segments to damage: {files:?}");
    let (newest, newest_bytes) = files.iter().next_back().expect("a segment");
    let records: Vec<(usize, record::RecordKind)> = record::reader(newest_bytes, false)
        .map(|r| {
            let r = r.expect("intact");
            let (kind, _) = record::decode_payload(r.payload).expect("a known kind");
            (r.offset as usize, kind)
        })
        .collect();
    let (last_start, _) = *records.last().expect("a record");
    let entries_before_last = records[..records.len() - 1]
        .iter()
        .filter(|(_, kind)| *kind == record::RecordKind::Entries)
        .count();
    assert!(
        entries_before_last >= 2,
        "the newest segment holds {entries_before_last} entries records before its last"
    );
    let without_last = {
        let copy = fs.durable_copy();
        copy.overwrite(
            &Path::new(DIR).join(newest),
            newest_bytes[..last_start].to_vec(),
        );
        view(&open(&copy, max_segment_bytes).expect("cut before the last record"))
    };
    let mut flips = 0;
    for (name, bytes) in &files {
        for at in 0..bytes.len() {
            let result = open_with_flip(&fs, name, at, max_segment_bytes);
            if name == newest && at >= last_start {
                let store = result.unwrap_or_else(|e| panic!("{name}@{at}: {e}"));
                assert_eq!(view(&store), without_last, "{name}@{at}");
            } else {
                assert!(
                    matches!(result, Err(LogError::Corruption { .. })),
                    "{name}@{at}: damage must be reported, got {:?}",
                    result.map(|s| view(&s))
                );
            }
            flips += 1;
        }
    }
    eprintln!("{flips} bytes flipped in {} segments", files.len());
    assert!(flips > 300, "{flips} flips");
}

// Proves the fix for what the every-offset test found: when a persist
// starts a new segment, the segment's header restates the log as it was
// on disk, not the hard state of the pending Ready. Before, a crash that
// kept the header but not the entries after it left a commit index beyond
// the last entry, and raft refuses to start from such a log.
#[test]
fn new_segment_header_never_commits_ahead_of_its_entries() {
    let fs = FaultFs::new();
    let mut store = open(&fs, 100).expect("open");
    store.set_hard_state(&hard_state(1, 1, 0));
    store.append(&entries(1, 3, 1));
    store.persist().expect("persist");
    let before = segments(&fs);
    // One Ready: entries and the hard state committing them; it rolls.
    store.append(&entries(4, 6, 1));
    store.set_hard_state(&hard_state(1, 2, 6));
    store.persist().expect("persist");
    let after = segments(&fs);
    let (newest, bytes) = after.iter().next_back().expect("a segment");
    assert!(!before.contains_key(newest), "the persist rolled");
    let header_end = record::reader(bytes, false)
        .nth(1)
        .expect("hard state and configuration")
        .expect("intact")
        .end() as usize;
    let crashed = fs.crash();
    crashed.overwrite(&Path::new(DIR).join(newest), bytes[..header_end].to_vec());
    let recovered = view(&open(&crashed, 100).expect("recovers"));
    assert_eq!(recovered.last_index, 3);
    assert_eq!(
        recovered.hard_state,
        (1, 1, 0),
        "the state before the Ready"
    );
}
