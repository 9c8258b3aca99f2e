//! The outbound raft transport over the internal `strata.v1.Raft` service.
//!
//! Each peer has two lanes, each a bounded queue drained by a task of its
//! own that writes whatever has piled up as one batch onto a long-lived
//! `Raft/Stream` call to that peer, so a message costs one HTTP/2 data frame
//! rather than a whole RPC. Appends take the bulk lane, in order; every
//! other message (heartbeats and their answers, votes, the answers to
//! appends, ReadIndex) takes the control lane, so it never waits behind
//! megabytes of entries: a follower that heard no heartbeat for an election
//! timeout because a few large appends were ahead of it would campaign
//! against a leader that is alive. The control lane has a connection of its
//! own, since HTTP/2 streams of one connection share its flow-control
//! window. Raft tolerates messages reordered between the lanes. A batch is bounded in messages and in bytes, so it stays well
//! under the largest message a stream carries. A full queue drops messages,
//! which raft tolerates; a stream that fails or stalls tells raft the peer
//! is unreachable. Snapshots go on a stream of their own. Lanes are made
//! when a peer is first sent to, so members added later need no restart.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use strata_proto::v1::raft_client::RaftClient;
use strata_proto::v1::{RaftAck, RaftBatch};
use strata_raft::{Message, MessageType, PeerHandle, Stamp, Transport};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio_stream::wrappers::ReceiverStream;

use crate::channels::MemberChannels;
use crate::snapshot_backoff::RefusalBackoff;
use crate::snapshot_send;

const QUEUE_CAPACITY: usize = 4096;
const MAX_BATCH_MESSAGES: usize = 512;
/// The largest message a raft stream carries, which the receiving node
/// also accepts.
const MAX_FRAME_BYTES: usize = 64 << 20;
/// The encoded messages one batch holds at most, unless a single message
/// is larger (it then travels alone; the driver keeps entries, and so
/// appends, well under `MAX_FRAME_BYTES`).
const MAX_BATCH_BYTES: usize = 16 << 20;
/// Batches handed to a stream and not yet written to its connection.
const STREAM_BUFFER: usize = 16;
/// How long a batch may wait for room on a stream before the peer is
/// reported unreachable and the stream reopened.
const STALL_TIMEOUT: Duration = Duration::from_secs(2);
const BACKOFF_AFTER_FAILURE: Duration = Duration::from_millis(20);

/// Which of a peer's streams a message takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Lane {
    /// Appends, which may carry megabytes of entries.
    Bulk,
    /// Everything else: small, and what keeps a leader in office.
    Control,
}

impl Lane {
    fn of(m: &Message) -> Lane {
        // Every append, empty or not, stays on one lane so that appends keep
        // their order: an append overtaking an earlier one would be refused
        // and cost a probe.
        if m.get_msg_type() == MessageType::MsgAppend {
            Lane::Bulk
        } else {
            Lane::Control
        }
    }
}

pub struct GrpcTransport {
    queues: Mutex<HashMap<(u64, Lane), mpsc::Sender<Stamped>>>,
    channels: Arc<MemberChannels>,
    group_id: u64,
    peer: Arc<OnceLock<PeerHandle>>,
    runtime: tokio::runtime::Handle,
    /// The control lane's runtime (`peer_net`), so that heartbeats never wait
    /// for the request runtime's workers.
    control: tokio::runtime::Handle,
    /// Waits owed to members that refused a snapshot for a lasting reason.
    snapshot_backoff: Arc<RefusalBackoff>,
}

impl GrpcTransport {
    /// `peer` is filled in once the local peer exists, so failures can be
    /// reported to it. Must be created inside a tokio runtime, which runs
    /// the bulk lane and snapshots; `control` runs the control lane.
    pub fn new(
        channels: Arc<MemberChannels>,
        group_id: u64,
        peer: Arc<OnceLock<PeerHandle>>,
        control: tokio::runtime::Handle,
    ) -> Self {
        GrpcTransport {
            queues: Mutex::new(HashMap::new()),
            channels,
            group_id,
            peer,
            runtime: tokio::runtime::Handle::current(),
            control,
            snapshot_backoff: Arc::default(),
        }
    }

    /// The queue of `lane` to `to`, starting its sender task on first use.
    fn queue(&self, to: u64, lane: Lane) -> Option<mpsc::Sender<Stamped>> {
        let mut queues = self.queues.lock();
        if let Some(q) = queues.get(&(to, lane))
            && !q.is_closed()
        {
            return Some(q.clone());
        }
        // The control lane has a connection of its own, made and driven on
        // its own runtime and served on the peer's by the peer's own
        // (`peer_net`): on a shared connection its messages would wait for
        // the flow-control window behind the bulk lane's megabytes, and on
        // the request runtime for workers busy with requests.
        let (channel, runtime) = match lane {
            Lane::Bulk => (self.channels.channel(to)?, &self.runtime),
            Lane::Control => {
                let _control = self.control.enter();
                (self.channels.peer_channel(to)?, &self.control)
            }
        };
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let client = RaftClient::new(channel)
            .max_decoding_message_size(MAX_FRAME_BYTES)
            .max_encoding_message_size(MAX_FRAME_BYTES);
        let header = BatchHeader {
            group_id: self.group_id,
            from: self.channels.self_id(),
            to,
        };
        runtime.spawn(pump(rx, client, header, self.peer.clone()));
        queues.insert((to, lane), tx.clone());
        Some(tx)
    }
}

impl Transport for GrpcTransport {
    fn send(&self, messages: Vec<Message>) {
        // Called on the raft thread: channels and tasks need the runtime.
        let _runtime = self.runtime.enter();
        for m in messages {
            if m.get_msg_type() == MessageType::MsgSnapshot {
                // Snapshots travel on their own stream so they never hold up
                // heartbeats and appends.
                match (self.peer.get(), self.channels.channel(m.to)) {
                    (Some(peer), Some(channel)) => {
                        let from = self.channels.self_id();
                        let fut = snapshot_send::send(
                            peer.clone(),
                            channel,
                            self.snapshot_backoff.clone(),
                            self.group_id,
                            from,
                            m,
                        );
                        self.runtime.spawn(fut);
                    }
                    (Some(peer), None) => peer.report_snapshot(m.to, false),
                    _ => {}
                }
                continue;
            }
            if let Some(q) = self.queue(m.to, Lane::of(&m)) {
                // Stamped as it is handed over, with what the peer knew
                // when it made the message (see `Stamped`).
                let stamp = self
                    .peer
                    .get()
                    .map_or_else(Stamp::default, |p| p.stamp_to(m.to));
                let _ = q.try_send(Stamped { message: m, stamp });
            }
        }
    }
}

/// A message and the stamp its batch carries: what the peer knew of
/// itself and the receiver when it handed the message over. Taken any
/// later (when the batch leaves), a message the leader made from what a
/// member acknowledged in an earlier life (a heartbeat's commit) could
/// leave under the member's new life, which the leader learned of
/// meanwhile: the member would read it as its new life being counted for
/// entries it does not hold, and stop as having lost state.
struct Stamped {
    message: Message,
    stamp: Stamp,
}

/// Sends everything queued for one peer, on one long-lived stream at a
/// time. A stream that fails (connection lost, peer stopped, batch refused)
/// or stalls tells raft the peer is unreachable; the next message opens a
/// new one after a short pause.
async fn pump(
    mut rx: mpsc::Receiver<Stamped>,
    client: RaftClient<tonic::transport::Channel>,
    header: BatchHeader,
    peer: Arc<OnceLock<PeerHandle>>,
) {
    while let Some(first) = rx.recv().await {
        let (batches, stream) = mpsc::channel(STREAM_BUFFER);
        let mut client = client.clone();
        let call = async move { client.stream(ReceiverStream::new(stream)).await };
        match feed(first, &mut rx, &batches, call, header, STALL_TIMEOUT).await {
            Ended::QueueClosed => return,
            Ended::Failed(reason) => {
                tracing::debug!(to = header.to, reason, "raft stream ended");
                if let Some(p) = peer.get() {
                    p.report_unreachable(header.to);
                }
                tokio::time::sleep(BACKOFF_AFTER_FAILURE).await;
            }
        }
    }
}

/// Who a peer's batches are from and for.
#[derive(Clone, Copy)]
struct BatchHeader {
    group_id: u64,
    from: u64,
    to: u64,
}

const BODY_DROPPED: &str = "the stream's request body was dropped";

#[derive(Debug, PartialEq)]
enum Ended {
    /// The transport was dropped: nothing more will be sent.
    QueueClosed,
    Failed(String),
}

/// Feeds batches into one open stream until it ends. `call` is the stream's
/// RPC, whose answer only comes when the stream ends; it is polled alongside
/// so that a failure shows at once.
async fn feed(
    first: Stamped,
    rx: &mut mpsc::Receiver<Stamped>,
    batches: &mpsc::Sender<RaftBatch>,
    call: impl Future<Output = Result<tonic::Response<RaftAck>, tonic::Status>>,
    header: BatchHeader,
    stall: Duration,
) -> Ended {
    let ended = |answer: Result<tonic::Response<RaftAck>, tonic::Status>| match answer {
        Ok(_) => Ended::Failed("the receiver closed the stream".into()),
        Err(status) => Ended::Failed(status.to_string()),
    };
    tokio::pin!(call);
    // A message taken from the queue but left for the next batch.
    let mut next = Some(encoded(&first));
    loop {
        let first = match next.take() {
            Some(m) => m,
            None => tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => encoded(&m),
                    None => return Ended::QueueClosed,
                },
                answer = &mut call => return ended(answer),
            },
        };
        let (batch, left) = collect_batch(first, rx, header);
        next = left;
        let batch = match batches.try_send(batch) {
            Ok(()) => continue,
            Err(TrySendError::Closed(_)) => {
                return Ended::Failed(BODY_DROPPED.into());
            }
            Err(TrySendError::Full(batch)) => batch,
        };
        // The connection is not taking data: wait for room, but not forever.
        tokio::select! {
            sent = batches.send(batch) => if sent.is_err() {
                return Ended::Failed(BODY_DROPPED.into());
            },
            answer = &mut call => return ended(answer),
            _ = tokio::time::sleep(stall) => {
                return Ended::Failed(format!("no room on the stream for {stall:?}"));
            }
        }
    }
}

/// A message encoded, with its stamp.
fn encoded(m: &Stamped) -> (Bytes, Stamp) {
    (
        Bytes::from(strata_raft::encode_message(&m.message)),
        m.stamp,
    )
}

/// `first` (encoded, with its stamp) and whatever else is already queued
/// under the same stamp, up to a batch's limits in messages and bytes; a
/// message taken that would pass the byte limit, or that carries another
/// stamp, is returned to start the next batch.
fn collect_batch(
    (first, stamp): (Bytes, Stamp),
    rx: &mut mpsc::Receiver<Stamped>,
    header: BatchHeader,
) -> (RaftBatch, Option<(Bytes, Stamp)>) {
    let mut bytes = first.len();
    let mut messages = vec![first];
    let mut left = None;
    while messages.len() < MAX_BATCH_MESSAGES {
        let Ok(m) = rx.try_recv() else { break };
        let (m, its_stamp) = encoded(&m);
        if its_stamp != stamp || bytes + m.len() > MAX_BATCH_BYTES {
            left = Some((m, its_stamp));
            break;
        }
        bytes += m.len();
        messages.push(m);
    }
    let batch = RaftBatch {
        group_id: header.group_id,
        from_node: header.from,
        to_node: header.to,
        messages,
        from_incarnation: stamp.incarnation,
        from_proven: stamp.proven,
        to_incarnation: stamp.to_incarnation,
        vouched: stamp.vouched,
        cluster_id: stamp.cluster_id,
    };
    (batch, left)
}

#[cfg(test)]
mod tests {
    use std::future::pending;

    use super::*;

    const HEADER: BatchHeader = BatchHeader {
        group_id: 1,
        from: 1,
        to: 2,
    };

    const STAMP: Stamp = Stamp {
        incarnation: 11,
        proven: true,
        to_incarnation: 22,
        vouched: true,
        cluster_id: 33,
    };

    fn message(index: u64) -> Message {
        Message {
            to: 2,
            from: 1,
            index,
            ..Message::default()
        }
    }

    /// `m` as handed over under `stamp`.
    fn stamped(m: Message, stamp: Stamp) -> Stamped {
        Stamped { message: m, stamp }
    }

    /// The raft indexes of `batch`'s messages, in order.
    fn indexes(batch: &RaftBatch) -> Vec<u64> {
        batch
            .messages
            .iter()
            .map(|b| strata_raft::decode_message(b).unwrap().index)
            .collect()
    }

    /// Feeds `first` and what `rx` queues into `batches` on a stream that
    /// never answers, until the queue closes.
    fn spawn_feed(
        first: Stamped,
        mut rx: mpsc::Receiver<Stamped>,
        batches: mpsc::Sender<RaftBatch>,
    ) -> tokio::task::JoinHandle<Ended> {
        tokio::spawn(async move {
            let answer = pending::<Answer>();
            feed(first, &mut rx, &batches, answer, HEADER, STALL_TIMEOUT).await
        })
    }

    type Answer = Result<tonic::Response<RaftAck>, tonic::Status>;

    #[tokio::test]
    async fn queued_messages_travel_as_one_batch_until_the_queue_closes() {
        // Proves: what is queued when a batch starts goes in that batch, with
        // the header and the stamp; later messages go in later batches on the same stream;
        // closing the queue ends the feed without a failure.
        let (tx, rx) = mpsc::channel(16);
        let (batches, mut out) = mpsc::channel(STREAM_BUFFER);
        for i in 2..=4 {
            tx.try_send(stamped(message(i), STAMP)).unwrap();
        }
        let feeding = spawn_feed(stamped(message(1), STAMP), rx, batches);
        let first = out.recv().await.unwrap();
        assert_eq!((first.group_id, first.from_node, first.to_node), (1, 1, 2));
        assert_eq!(
            (
                first.from_incarnation,
                first.from_proven,
                first.to_incarnation,
                first.vouched,
                first.cluster_id
            ),
            (11, true, 22, true, 33),
            "the batch carries the stamp"
        );
        assert_eq!(indexes(&first), vec![1, 2, 3, 4]);
        tx.send(stamped(message(5), STAMP)).await.unwrap();
        let second = out.recv().await.unwrap();
        assert_eq!(second.messages.len(), 1);
        drop(tx);
        assert_eq!(feeding.await.unwrap(), Ended::QueueClosed);
    }

    #[tokio::test]
    async fn a_message_leaves_with_the_stamp_it_was_handed_over_with() {
        // Proves: a message queued before the peer learned of the
        // receiver's new life leaves stamped with the old life, even when
        // its batch is put together after, and a message queued after
        // leaves with the new life in a batch of its own; the order holds.
        // (Stamped as its batch left, the first went out under the new
        // life: a heartbeat carrying the old life's commit then read as the
        // new life being counted for entries it does not hold.)
        let old_life = Stamp {
            to_incarnation: 22,
            ..STAMP
        };
        let new_life = Stamp {
            to_incarnation: 23,
            vouched: false,
            ..STAMP
        };
        let (tx, rx) = mpsc::channel(16);
        let (batches, mut out) = mpsc::channel(STREAM_BUFFER);
        tx.try_send(stamped(message(2), old_life)).unwrap();
        tx.try_send(stamped(message(3), new_life)).unwrap();
        tx.try_send(stamped(message(4), new_life)).unwrap();
        let feeding = spawn_feed(stamped(message(1), old_life), rx, batches);
        let first = out.recv().await.unwrap();
        assert_eq!((indexes(&first), first.to_incarnation), (vec![1, 2], 22));
        assert!(first.vouched);
        let second = out.recv().await.unwrap();
        assert_eq!((indexes(&second), second.to_incarnation), (vec![3, 4], 23));
        assert!(!second.vouched);
        drop(tx);
        assert_eq!(feeding.await.unwrap(), Ended::QueueClosed);
    }

    /// An append carrying one entry of `entry_bytes`.
    fn append(index: u64, entry_bytes: usize) -> Message {
        let mut m = message(index);
        m.set_msg_type(MessageType::MsgAppend);
        let entry = strata_raft::Entry {
            index,
            data: vec![7u8; entry_bytes].into(),
            ..Default::default()
        };
        m.set_entries(vec![entry].into());
        m
    }

    #[tokio::test]
    async fn large_appends_travel_in_batches_well_under_the_frame_limit() {
        // Proves: batches are bounded by bytes as well as by count, so four
        // 16 MiB appends queued together (more than the 64 MiB a stream
        // message may carry, which would stall replication) go in several
        // batches, each at most MAX_BATCH_BYTES but for a lone message,
        // in order and none lost.
        let (tx, rx) = mpsc::channel(16);
        let (batches, mut out) = mpsc::channel(STREAM_BUFFER);
        for i in 2..=4 {
            tx.try_send(stamped(append(i, 16 << 20), STAMP)).unwrap();
        }
        let feeding = spawn_feed(stamped(append(1, 16 << 20), STAMP), rx, batches);
        let mut seen = Vec::new();
        while seen.len() < 4 {
            let batch = out.recv().await.expect("a batch");
            let frame = prost::Message::encoded_len(&batch);
            assert!(
                frame <= MAX_FRAME_BYTES / 2,
                "a batch of {} messages takes {frame} bytes",
                batch.messages.len()
            );
            let payload: usize = batch.messages.iter().map(|b| b.len()).sum();
            assert!(
                batch.messages.len() == 1 || payload <= MAX_BATCH_BYTES,
                "{} messages of {payload} bytes in one batch",
                batch.messages.len()
            );
            seen.extend(indexes(&batch));
        }
        assert_eq!(seen, vec![1, 2, 3, 4]);
        drop(tx);
        assert_eq!(feeding.await.unwrap(), Ended::QueueClosed);
    }

    #[test]
    fn appends_take_the_bulk_lane_and_everything_else_the_control_lane() {
        // Proves: heartbeats, votes and the answers to appends never queue
        // behind appends (which may carry megabytes of entries), and every
        // append, empty or not, takes the same lane so appends keep their
        // order.
        let of = |t: MessageType| {
            let mut m = message(1);
            m.set_msg_type(t);
            Lane::of(&m)
        };
        assert_eq!(Lane::of(&append(1, 16 << 20)), Lane::Bulk);
        assert_eq!(of(MessageType::MsgAppend), Lane::Bulk);
        for t in [
            MessageType::MsgHeartbeat,
            MessageType::MsgHeartbeatResponse,
            MessageType::MsgAppendResponse,
            MessageType::MsgRequestVote,
            MessageType::MsgRequestPreVote,
            MessageType::MsgRequestVoteResponse,
            MessageType::MsgRequestPreVoteResponse,
            MessageType::MsgReadIndex,
            MessageType::MsgReadIndexResp,
            MessageType::MsgTimeoutNow,
        ] {
            assert_eq!(of(t), Lane::Control, "{t:?}");
        }
    }

    #[tokio::test]
    async fn a_failed_stream_ends_the_feed_with_its_status() {
        // Proves: the stream's RPC finishing (an error from the receiver, or
        // even OK) ends the feed as a failure, so raft hears of it.
        let (_tx, mut rx) = mpsc::channel(16);
        let (batches, _out) = mpsc::channel(STREAM_BUFFER);
        let refused = async { Err(tonic::Status::invalid_argument("batch addressed to node 7")) };
        let ended = feed(
            stamped(message(1), STAMP),
            &mut rx,
            &batches,
            refused,
            HEADER,
            STALL_TIMEOUT,
        )
        .await;
        let Ended::Failed(reason) = ended else {
            panic!("expected a failure, got {ended:?}")
        };
        assert!(reason.contains("node 7"), "{reason}");
        let closed = async { Ok(tonic::Response::new(RaftAck {})) };
        let ended = feed(
            stamped(message(1), STAMP),
            &mut rx,
            &batches,
            closed,
            HEADER,
            STALL_TIMEOUT,
        )
        .await;
        assert_eq!(
            ended,
            Ended::Failed("the receiver closed the stream".into())
        );
    }

    #[tokio::test]
    async fn a_stream_without_room_is_given_up() {
        // Proves: when the connection takes nothing (a paused peer), the
        // feed stops after the stall timeout instead of waiting forever.
        let (_tx, mut rx) = mpsc::channel(16);
        let (batches, _out) = mpsc::channel(1);
        // The stream's buffer is already full.
        let (full, _) = collect_batch(encoded(&stamped(message(1), STAMP)), &mut rx, HEADER);
        batches.try_send(full).unwrap();
        let stall = Duration::from_millis(50);
        let feeding = feed(
            stamped(message(2), STAMP),
            &mut rx,
            &batches,
            pending::<Answer>(),
            HEADER,
            stall,
        );
        let ended = tokio::time::timeout(Duration::from_secs(30), feeding)
            .await
            .expect("the feed gave up");
        assert_eq!(
            ended,
            Ended::Failed(format!("no room on the stream for {stall:?}"))
        );
    }
}
