//! Watches: the changes to a key range, in commit order, read from this
//! node's change history (`StateMachine::history`), behind both the gRPC
//! stream (`KV/Watch`) and the REST event stream (`GET /v1/watch`).
//!
//! A watch is a task that reads the history from its position on, sends
//! the changes that match (all of one raft index in one message), and
//! waits for the next apply round when it has read everything. It holds no
//! change it has not sent: a client that stops reading stops the task at
//! its next send, and when it reads again the task goes on from its
//! position in the history, so a slow watcher costs no memory. If the
//! history was trimmed past that position meanwhile, the watch ends with
//! COMPACTED and the oldest index still held; the client starts again
//! from a fresh read. With nothing to send, a progress message says how
//! far the watch has read, first once the replay is done and then after
//! each quiet interval. A stopping node ends its watches with UNAVAILABLE;
//! the client resumes on another node from the last index it was sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use strata_proto::v1::{WatchRequest, watch_request};
use strata_raft::{Change, ChangeKind, HistoryError, HistoryPosition, KeySpan, StateMachine};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::error::{ApiError, ErrorCode};
use crate::groups::Groups;
use strata_raft::keys::prefix_end;

/// The most changes, and bytes of keys and values, one history read takes.
const PAGE_CHANGES: usize = 512;
const PAGE_BYTES: usize = 1 << 20;
/// The quiet interval between progress messages when the client names none.
pub const DEFAULT_PROGRESS: Duration = Duration::from_secs(10);
/// The shortest quiet interval a client may ask for.
const MIN_PROGRESS: Duration = Duration::from_millis(100);
/// The most watches one node serves at once.
pub const MAX_WATCHES: usize = 1024;
/// Messages a watch may have sent that its client has not taken yet.
const SENT_AHEAD: usize = 4;

/// What a watch sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchMessage {
    /// The matching changes of raft index `index`, all of them.
    Changes { index: u64, changes: Vec<Change> },
    /// Every matching change through `index` has been sent.
    Progress { index: u64 },
}

impl WatchMessage {
    /// The index a watch resumed after this message starts from, minus one.
    pub fn index(&self) -> u64 {
        match self {
            WatchMessage::Changes { index, .. } | WatchMessage::Progress { index } => *index,
        }
    }
}

/// A validated watch request.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    pub start: Vec<u8>,
    /// Exclusive; `None`: to the end of the key space.
    pub end: Option<Vec<u8>>,
    /// The first raft index to send changes of; `None`: after the applied
    /// index at the start.
    pub from_index: Option<u64>,
    pub progress: Duration,
}

impl WatchSpec {
    /// Checks a gRPC request (the REST one is read into one too).
    pub fn from_request(req: &WatchRequest) -> Result<WatchSpec, ApiError> {
        let (start, end) = match &req.selector {
            None => (Vec::new(), None),
            Some(watch_request::Selector::Key(k)) => {
                if k.is_empty() {
                    return Err(ApiError::invalid("key must not be empty"));
                }
                let mut end = k.to_vec();
                end.push(0);
                (k.to_vec(), Some(end))
            }
            Some(watch_request::Selector::Prefix(p)) => (p.to_vec(), prefix_end(p)),
            Some(watch_request::Selector::Range(r)) => {
                let end = (!r.end.is_empty()).then(|| r.end.to_vec());
                if let Some(e) = &end
                    && r.start.as_ref() > e.as_slice()
                {
                    return Err(ApiError::invalid("range start is after its end"));
                }
                (r.start.to_vec(), end)
            }
        };
        let progress = match req.progress_interval_ms {
            0 => DEFAULT_PROGRESS,
            ms => Duration::from_millis(ms.into()),
        };
        if progress < MIN_PROGRESS {
            return Err(ApiError::invalid(format!(
                "progress_interval_ms must be at least {}",
                MIN_PROGRESS.as_millis()
            )));
        }
        Ok(WatchSpec {
            start,
            end,
            from_index: (req.from_index > 0).then_some(req.from_index),
            progress,
        })
    }

    fn matches(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_ref().is_none_or(|e| key < e.as_slice())
    }

    /// Whether the watched keys reach `key` or past it (so that a split
    /// there takes some of them to another group).
    fn reaches(&self, key: &[u8]) -> bool {
        self.end.as_ref().is_none_or(|e| e.as_slice() > key)
    }
}

/// The ranges a node serves, with their groups' state machines: what
/// [`Watches`] chooses a watch's group from.
pub type Ranges = Box<dyn Fn() -> Vec<(KeySpan, Arc<StateMachine>)> + Send + Sync>;

/// The ranges of the groups in `groups`.
pub fn ranges_of(groups: Arc<Groups>) -> Ranges {
    Box::new(move || {
        groups
            .spans()
            .into_iter()
            .map(|(span, group)| (span, group.state_machine().clone()))
            .collect()
    })
}

/// The watches of one node.
pub struct Watches {
    node_id: u64,
    ranges: Ranges,
    stopping: watch::Receiver<bool>,
    open: Arc<AtomicUsize>,
}

/// A running watch: its messages, ending with an error if it ends.
pub struct WatchStream {
    pub node_id: u64,
    pub messages: mpsc::Receiver<Result<WatchMessage, ApiError>>,
}

impl Watches {
    pub fn new(node_id: u64, ranges: Ranges, stopping: watch::Receiver<bool>) -> Self {
        Watches {
            node_id,
            ranges,
            stopping,
            open: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// How many watches are open.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Starts a watch. A start index older than the history, and one
    /// watch too many, are refused here, before anything is sent.
    pub fn start(&self, spec: WatchSpec) -> Result<WatchStream, ApiError> {
        // The group is chosen, then its history's bounds read, then the
        // group looked at again: a split applied in between took the keys
        // to another group, whose history is then the one to read (a split
        // applied later is met in the history as the watch reads it).
        let mut tries = 0;
        let (state_machine, oldest, applied) = loop {
            let state_machine = self.serving(&spec)?;
            let (oldest, applied) = state_machine
                .history_bounds()
                .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))?;
            tries += 1;
            if covers(&state_machine, &spec) || tries == 3 {
                break (state_machine, oldest, applied);
            }
        };
        if !state_machine.keeps_history() {
            return Err(ApiError::unavailable(format!(
                "node {} keeps no change history (--watch-history 0): watch on a node that does",
                self.node_id
            )));
        }
        if *self.stopping.borrow() {
            return Err(ApiError::unavailable(format!(
                "node {} is shutting down; watch on another node",
                self.node_id
            )));
        }
        let from = spec.from_index.unwrap_or(applied + 1);
        if from < oldest {
            return Err(compacted(oldest));
        }
        let open = self.open.fetch_add(1, Ordering::Relaxed);
        if open >= MAX_WATCHES {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return Err(ApiError::new(
                ErrorCode::Overloaded,
                format!("this node serves {MAX_WATCHES} watches already; watch on another node"),
            ));
        }
        let (tx, messages) = mpsc::channel(SENT_AHEAD);
        let task = WatchTask {
            applied: state_machine.applied_changes(),
            state_machine,
            stopping: self.stopping.clone(),
            spec,
            position: HistoryPosition::at(from),
            tx,
            node_id: self.node_id,
        };
        let open = OpenWatch(self.open.clone());
        tokio::spawn(async move {
            let _open = open;
            task.run().await;
        });
        Ok(WatchStream {
            node_id: self.node_id,
            messages,
        })
    }
}

impl Watches {
    /// The state machine of the group serving every key `spec` watches: a
    /// watch reads one group's history, so one reaching keys of two groups
    /// is refused.
    fn serving(&self, spec: &WatchSpec) -> Result<Arc<StateMachine>, ApiError> {
        let spans = (self.ranges)();
        let covering = spans
            .iter()
            .filter(|(span, _)| span.covers(&spec.start, spec.end.as_deref()))
            .max_by(|a, b| a.0.start.cmp(&b.0.start));
        if let Some((_, state_machine)) = covering {
            return Ok(state_machine.clone());
        }
        let splits: Vec<String> = spans
            .iter()
            .filter_map(|(span, _)| span.end.as_deref())
            .filter(|end| spec.matches(end))
            .map(|end| format!("{:?}", String::from_utf8_lossy(end)))
            .collect();
        if splits.is_empty() {
            return Err(ApiError::unavailable(format!(
                "the range holding the watched keys is not started on node {} yet (it was just \
                 split off another); retry",
                self.node_id
            )));
        }
        Err(ApiError::invalid(format!(
            "the watched keys are served by more than one range (split at {}): a watch follows \
             one range; watch each part",
            splits.join(", ")
        )))
    }
}

/// Counts a watch as open while it lives.
struct OpenWatch(Arc<AtomicUsize>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether `state_machine`'s group serves every key `spec` watches.
fn covers(state_machine: &StateMachine, spec: &WatchSpec) -> bool {
    state_machine
        .span()
        .is_ok_and(|span| span.covers(&spec.start, spec.end.as_deref()))
}

fn compacted(oldest: u64) -> ApiError {
    ApiError::compacted(
        oldest,
        format!(
            "the changes before raft index {oldest} are no longer held on this node; \
             read the current state and watch from its index, or from {oldest} at the earliest"
        ),
    )
}

struct WatchTask {
    state_machine: Arc<StateMachine>,
    applied: watch::Receiver<u64>,
    stopping: watch::Receiver<bool>,
    spec: WatchSpec,
    /// The next change to read.
    position: HistoryPosition,
    tx: mpsc::Sender<Result<WatchMessage, ApiError>>,
    node_id: u64,
}

/// How a watch ended, for nothing but leaving its loop.
struct Ended;

/// What woke a watch that had read everything.
enum Wake {
    Applied,
    Quiet,
    Stopping,
}

impl WatchTask {
    async fn run(mut self) {
        let _ = self.follow().await;
    }

    async fn send(&self, m: Result<WatchMessage, ApiError>) -> Result<(), Ended> {
        self.tx.send(m).await.map_err(|_| Ended)
    }

    async fn follow(&mut self) -> Result<(), Ended> {
        // The changes of the raft index a page ended in, until the next
        // page completes it.
        let mut partial: Vec<Change> = Vec::new();
        // Whether the first progress message (the replay is done) went out.
        let mut caught_up = false;
        let mut quiet_since = Instant::now();
        loop {
            self.applied.borrow_and_update();
            let covered = covers(&self.state_machine, &self.spec);
            let page = match self
                .state_machine
                .history(self.position, PAGE_CHANGES, PAGE_BYTES)
            {
                Ok(page) => page,
                Err(HistoryError::Compacted { oldest }) => {
                    return self.send(Err(compacted(oldest))).await;
                }
                Err(HistoryError::Engine(e)) => {
                    let e = ApiError::new(ErrorCode::StorageFailed, e.to_string());
                    return self.send(Err(e)).await;
                }
            };
            let complete_below = if page.complete {
                page.applied + 1
            } else {
                page.next.index
            };
            let split_here = |c: &Change| c.kind == ChangeKind::Split && self.spec.reaches(&c.key);
            if !covered && page.complete && !page.changes.iter().any(split_here) {
                // The group gave some of the watched keys away before this
                // page was read, and the history from the watch's position
                // on holds no split of them: the split came before that
                // position (a watch started past it, on a replica that had
                // not applied it yet). Nothing more is sent from here.
                let e = ApiError::unavailable(format!(
                    "the watched range was split before index {}; watch again (one watch \
                     per range)",
                    self.position.index
                ));
                return self.send(Err(e)).await;
            }
            let mut sent = false;
            for change in page.changes {
                if change.kind == ChangeKind::Split {
                    if self.spec.reaches(&change.key) {
                        return self.left_at(&mut partial, &change).await;
                    }
                    continue;
                }
                // A change of a later index completes the one gathered.
                if partial.first().is_some_and(|p| p.index != change.index) {
                    self.flush(&mut partial).await?;
                    sent = true;
                }
                if self.spec.matches(&change.key) {
                    partial.push(change);
                }
            }
            if partial.first().is_some_and(|p| p.index < complete_below) {
                self.flush(&mut partial).await?;
                sent = true;
            }
            self.position = page.next;
            if sent {
                quiet_since = Instant::now();
            }
            if !page.complete {
                continue;
            }
            let through = page.next.index.saturating_sub(1);
            if !caught_up {
                caught_up = true;
                self.send(Ok(WatchMessage::Progress { index: through }))
                    .await?;
                quiet_since = Instant::now();
            }
            let progress_at = quiet_since + self.spec.progress;
            let woke = tokio::select! {
                changed = self.applied.changed() => match changed {
                    Ok(()) => Wake::Applied,
                    Err(_) => return Err(Ended),
                },
                _ = tokio::time::sleep_until(progress_at) => Wake::Quiet,
                _ = self.stopping.wait_for(|stop| *stop) => Wake::Stopping,
                _ = self.tx.closed() => return Err(Ended),
            };
            match woke {
                Wake::Applied => {}
                Wake::Quiet => {
                    self.send(Ok(WatchMessage::Progress { index: through }))
                        .await?;
                    quiet_since = Instant::now();
                }
                Wake::Stopping => {
                    let e = ApiError::unavailable(format!(
                        "node {} is shutting down; watch on another node from index {}",
                        self.node_id,
                        through + 1
                    ));
                    return self.send(Err(e)).await;
                }
            }
        }
    }

    /// Ends the watch at the split `split` that took some of its keys to
    /// another group: what came before is sent, then a progress message at
    /// the split's index, so a client that watches again from the index
    /// after the last it was sent (as on any UNAVAILABLE) resumes exactly
    /// there, in the group now serving its keys.
    async fn left_at(&self, partial: &mut Vec<Change>, split: &Change) -> Result<(), Ended> {
        if !partial.is_empty() {
            self.flush(partial).await?;
        }
        self.send(Ok(WatchMessage::Progress { index: split.index }))
            .await?;
        let e = ApiError::unavailable(format!(
            "the watched range was split at key {:?} by raft index {}; watch again from index \
             {} (one watch per range)",
            String::from_utf8_lossy(&split.key),
            split.index,
            split.index + 1
        ));
        self.send(Err(e)).await
    }

    /// Sends the changes gathered for one raft index.
    async fn flush(&self, partial: &mut Vec<Change>) -> Result<(), Ended> {
        let changes = std::mem::take(partial);
        let index = changes.first().map(|c| c.index).unwrap_or_default();
        self.send(Ok(WatchMessage::Changes { index, changes }))
            .await
    }
}

#[cfg(test)]
mod tests {
    use strata_engine::{Engine, Options};
    use strata_proto::v1::KeyRange;
    use strata_raft::{ChangeKind, Command, Committed, Proposal};

    use super::*;

    fn state_machine(dir: &std::path::Path, history: u64) -> Arc<StateMachine> {
        let engine = Arc::new(Engine::open(dir, Options::default()).unwrap());
        Arc::new(StateMachine::new(engine, 1).with_history(history))
    }

    /// The ranges of a node whose one group is `sm`'s.
    fn one(sm: &Arc<StateMachine>) -> Ranges {
        let sm = sm.clone();
        Box::new(move || vec![(sm.span().unwrap(), sm.clone())])
    }

    fn put(sm: &StateMachine, index: u64, key: &str) {
        let command = Command::Put {
            key: key.into(),
            value: format!("v{index}").into(),
        };
        apply(sm, index, command);
    }

    fn apply(sm: &StateMachine, index: u64, command: Command) {
        let entry = Committed {
            index,
            proposal: Some(Proposal {
                request_id: index,
                command,
                dedupe: None,
            }),
            conf_state: None,
            members: None,
        };
        sm.apply(&[entry]).unwrap();
    }

    fn prefix(p: &str, from_index: u64, progress_ms: u32) -> WatchSpec {
        WatchSpec::from_request(&WatchRequest {
            selector: Some(watch_request::Selector::Prefix(
                p.as_bytes().to_vec().into(),
            )),
            from_index,
            progress_interval_ms: progress_ms,
        })
        .unwrap()
    }

    async fn next(s: &mut WatchStream) -> Result<WatchMessage, ApiError> {
        tokio::time::timeout(Duration::from_secs(5), s.messages.recv())
            .await
            .expect("a message within 5 s")
            .expect("the watch still open")
    }

    fn keys(m: &WatchMessage) -> Vec<String> {
        match m {
            WatchMessage::Changes { changes, .. } => changes
                .iter()
                .map(|c| String::from_utf8_lossy(&c.key).into_owned())
                .collect(),
            WatchMessage::Progress { .. } => Vec::new(),
        }
    }

    // Proves that a watch from an index replays the matching changes of
    // the history, one message per raft index, says when it has caught
    // up, then follows new changes as they are applied, and skips changes
    // outside its range.
    #[tokio::test]
    async fn a_watch_replays_then_follows() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 1000);
        for (i, key) in ["a/1", "b/1", "a/2"].iter().enumerate() {
            put(&sm, i as u64 + 1, key);
        }
        let (_stop_tx, stopping) = watch::channel(false);
        let watches = Watches::new(1, one(&sm), stopping);
        let mut s = watches.start(prefix("a/", 1, 0)).unwrap();
        let first = next(&mut s).await.unwrap();
        assert_eq!((first.index(), keys(&first)), (1, vec!["a/1".into()]));
        let second = next(&mut s).await.unwrap();
        assert_eq!((second.index(), keys(&second)), (3, vec!["a/2".into()]));
        assert_eq!(
            next(&mut s).await.unwrap(),
            WatchMessage::Progress { index: 3 }
        );
        put(&sm, 4, "b/2");
        put(&sm, 5, "a/3");
        let live = next(&mut s).await.unwrap();
        assert_eq!((live.index(), keys(&live)), (5, vec!["a/3".into()]));
        let WatchMessage::Changes { changes, .. } = live else {
            unreachable!()
        };
        assert_eq!(changes[0].kind, ChangeKind::Put);
        assert_eq!(changes[0].value, b"v5");
        assert_eq!(watches.open(), 1);
        drop(s);
        put(&sm, 6, "a/4");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(watches.open(), 0, "a dropped watch still runs");
    }

    // Proves: a watch whose keys a split takes (some or all of them) to
    // another group ends at the split, after the changes before it and a
    // progress message at its index, with UNAVAILABLE naming the index to
    // watch again from; a watch of keys the group keeps goes on past it.
    // Once split, a watch reaching keys of both groups is refused, and one
    // of either side is served by the group that holds it.
    #[tokio::test]
    async fn a_watch_ends_where_a_split_takes_its_keys() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 1000);
        put(&sm, 1, "a/1");
        put(&sm, 2, "q/1");
        let (_stop_tx, stopping) = watch::channel(false);
        // Started before the split (the group then served every key).
        let before = Watches::new(1, one(&sm), stopping.clone());
        let mut all = before.start(prefix("", 1, 0)).unwrap();
        let mut right = before.start(prefix("q/", 1, 0)).unwrap();
        let mut left = before.start(prefix("a/", 1, 0)).unwrap();
        apply(
            &sm,
            3,
            Command::Split {
                at: "m".into(),
                child: 2,
            },
        );
        put(&sm, 4, "a/2");
        let child = Arc::new(StateMachine::new(sm.engine().clone(), 2).with_history(1000));
        let ranges: Ranges = {
            let (parent, child) = (sm.clone(), child.clone());
            Box::new(move || {
                vec![
                    (parent.span().unwrap(), parent.clone()),
                    (child.span().unwrap(), child.clone()),
                ]
            })
        };
        // The whole key space: the change before the split, then its end.
        assert_eq!(keys(&next(&mut all).await.unwrap()), ["a/1"]);
        assert_eq!(keys(&next(&mut all).await.unwrap()), ["q/1"]);
        assert_eq!(
            next(&mut all).await.unwrap(),
            WatchMessage::Progress { index: 3 }
        );
        let ended = next(&mut all).await.unwrap_err();
        assert_eq!(ended.code, ErrorCode::Unavailable);
        assert!(ended.message.contains("from index 4"), "{}", ended.message);
        // Keys all past the split key: the same end.
        assert_eq!(keys(&next(&mut right).await.unwrap()), ["q/1"]);
        assert_eq!(
            next(&mut right).await.unwrap(),
            WatchMessage::Progress { index: 3 }
        );
        assert!(next(&mut right).await.is_err());
        // Keys the group keeps: on past the split.
        assert_eq!(keys(&next(&mut left).await.unwrap()), ["a/1"]);
        let after = next(&mut left).await.unwrap();
        assert_eq!((after.index(), keys(&after)), (4, vec!["a/2".into()]));

        let split = Watches::new(1, ranges, stopping.clone());
        let stopping_after = stopping;
        let refused = split.start(prefix("", 0, 0)).err().unwrap();
        assert_eq!(refused.code, ErrorCode::InvalidArgument);
        assert!(refused.message.contains(r#""m""#), "{}", refused.message);
        // Watching the child's keys again from the index after the split.
        let mut resumed = split.start(prefix("q/", 4, 0)).unwrap();
        assert_eq!(
            next(&mut resumed).await.unwrap(),
            WatchMessage::Progress { index: 3 }
        );
        apply(
            &child,
            4,
            Command::Put {
                key: "q/2".into(),
                value: "v".into(),
            },
        );
        let moved = next(&mut resumed).await.unwrap();
        assert_eq!((moved.index(), keys(&moved)), (4, vec!["q/2".into()]));

        // A node whose map of ranges still has the parent serving every key
        // (a replica behind the split), asked for a watch from past the
        // split: the parent's history from there holds no split, and the
        // watch of the keys it gave away ends rather than go quiet; one of
        // the keys it kept goes on.
        let stale: Ranges = {
            let parent = sm.clone();
            Box::new(move || vec![(KeySpan::all(), parent.clone())])
        };
        let behind = Watches::new(1, stale, stopping_after);
        let mut gone = behind.start(prefix("q/", 5, 0)).unwrap();
        let ended = next(&mut gone).await.unwrap_err();
        assert_eq!(ended.code, ErrorCode::Unavailable);
        assert!(
            ended.message.contains("before index 5"),
            "{}",
            ended.message
        );
        let mut kept = behind.start(prefix("a/", 5, 0)).unwrap();
        put(&sm, 5, "a/3");
        let mut more = next(&mut kept).await.unwrap();
        if let WatchMessage::Progress { .. } = more {
            more = next(&mut kept).await.unwrap();
        }
        assert_eq!(
            (more.index(), keys(&more)),
            (5, vec!["a/3".into()]),
            "{more:?}"
        );
    }

    // Proves that an entry whose changes span more than one history page
    // is sent as one message, with nothing of it under the index before:
    // a page that ends inside an index holds its changes back until the
    // next page completes it.
    #[tokio::test]
    async fn an_index_cut_by_a_page_is_sent_whole_under_its_own_index() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 1000);
        put(&sm, 1, "k/first");
        let wide = Command::Batch(
            (0..PAGE_CHANGES + 100)
                .map(|i| strata_raft::Op::Put {
                    key: format!("k/{i:05}").into(),
                    value: b"v".to_vec(),
                })
                .collect(),
        );
        sm.apply(&[Committed {
            index: 2,
            proposal: Some(Proposal {
                request_id: 2,
                command: wide,
                dedupe: None,
            }),
            conf_state: None,
            members: None,
        }])
        .unwrap();
        put(&sm, 3, "k/last");
        let (_stop_tx, stopping) = watch::channel(false);
        let watches = Watches::new(1, one(&sm), stopping);
        let mut s = watches.start(prefix("k/", 1, 0)).unwrap();
        let mut got = Vec::new();
        while let WatchMessage::Changes { index, changes } = next(&mut s).await.unwrap() {
            assert!(
                changes.iter().all(|c| c.index == index),
                "a message for index {index} holds changes of another"
            );
            got.push((index, changes.len()));
        }
        assert_eq!(got, vec![(1, 1), (2, PAGE_CHANGES + 100), (3, 1)]);
    }

    // Proves that a watch from before the history is refused at once with
    // the oldest index held, and that a watch whose client stopped reading
    // while the history moved past it ends COMPACTED rather than holding
    // what it has not sent.
    #[tokio::test]
    async fn a_watch_behind_the_history_ends_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 5);
        for i in 1..=10 {
            put(&sm, i, "k");
        }
        let (_stop_tx, stopping) = watch::channel(false);
        let watches = Watches::new(1, one(&sm), stopping);
        let refused = watches.start(prefix("k", 2, 0)).err().unwrap();
        assert_eq!(refused.code, ErrorCode::Compacted);
        assert_eq!(refused.oldest_index, Some(6));

        let mut slow = watches.start(prefix("k", 6, 0)).unwrap();
        // The client reads nothing while 100 more entries are applied: the
        // watch fills its few messages and waits.
        tokio::time::sleep(Duration::from_millis(50)).await;
        for i in 11..=110 {
            put(&sm, i, "k");
        }
        let mut last = 0;
        let end = loop {
            match next(&mut slow).await {
                Ok(m) => last = m.index(),
                Err(e) => break e,
            }
        };
        assert_eq!(end.code, ErrorCode::Compacted, "{end:?}");
        assert_eq!(end.oldest_index, Some(106));
        assert!(
            (6..106).contains(&last),
            "the last change sent was at {last}"
        );
    }

    // Proves that a stopping node ends its watches UNAVAILABLE with the
    // index to resume from, and refuses new ones.
    #[tokio::test]
    async fn a_stopping_node_ends_its_watches() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 100);
        put(&sm, 1, "k");
        let (stop_tx, stopping) = watch::channel(false);
        let watches = Watches::new(1, one(&sm), stopping);
        let mut s = watches.start(prefix("k", 1, 0)).unwrap();
        assert_eq!(next(&mut s).await.unwrap().index(), 1);
        assert_eq!(
            next(&mut s).await.unwrap(),
            WatchMessage::Progress { index: 1 }
        );
        stop_tx.send_replace(true);
        let end = next(&mut s).await.unwrap_err();
        assert_eq!(end.code, ErrorCode::Unavailable);
        assert!(end.message.contains("from index 2"), "{}", end.message);
        assert_eq!(
            watches.start(prefix("k", 1, 0)).err().unwrap().code,
            ErrorCode::Unavailable
        );
    }

    // Proves that a node that keeps no history refuses watches, saying why.
    #[tokio::test]
    async fn a_node_without_history_refuses_watches() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 0);
        put(&sm, 1, "k");
        let (_stop_tx, stopping) = watch::channel(false);
        let watches = Watches::new(1, one(&sm), stopping);
        let refused = watches.start(prefix("k", 0, 0)).err().unwrap();
        assert_eq!(refused.code, ErrorCode::Unavailable);
        assert!(
            refused.message.contains("--watch-history 0"),
            "{}",
            refused.message
        );
    }

    // Proves that a quiet watch sends progress messages at its interval,
    // and that bad requests are refused.
    #[tokio::test]
    async fn a_quiet_watch_reports_progress_and_bad_requests_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sm = state_machine(dir.path(), 100);
        put(&sm, 1, "k");
        let (_stop_tx, stopping) = watch::channel(false);
        let watches = Watches::new(1, one(&sm), stopping);
        let mut s = watches.start(prefix("other", 0, 100)).unwrap();
        for _ in 0..3 {
            assert_eq!(
                next(&mut s).await.unwrap(),
                WatchMessage::Progress { index: 1 }
            );
        }
        put(&sm, 2, "k");
        let m = next(&mut s).await.unwrap();
        assert_eq!(m, WatchMessage::Progress { index: 2 });

        let bad = |req: WatchRequest| WatchSpec::from_request(&req).unwrap_err().code;
        assert_eq!(
            bad(WatchRequest {
                progress_interval_ms: 5,
                ..Default::default()
            }),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            bad(WatchRequest {
                selector: Some(watch_request::Selector::Range(KeyRange {
                    start: "z".into(),
                    end: "a".into(),
                })),
                ..Default::default()
            }),
            ErrorCode::InvalidArgument
        );
        assert_eq!(
            bad(WatchRequest {
                selector: Some(watch_request::Selector::Key(Default::default())),
                ..Default::default()
            }),
            ErrorCode::InvalidArgument
        );
    }
}
