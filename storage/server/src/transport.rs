//! The outbound raft transport over the internal `strata.v1.Raft` service.
//!
//! One task per peer drains a bounded queue and sends whatever has piled up
//! as one batch, so a busy leader sends few, large RPCs. A full queue drops
//! messages, which raft tolerates; a failed send tells raft the peer is
//! unreachable. Snapshots go on a stream of their own. Queues are made when
//! a peer is first sent to, so members added later need no restart.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use strata_proto::v1::RaftBatch;
use strata_proto::v1::raft_client::RaftClient;
use strata_raft::{Message, MessageType, PeerHandle, Transport};
use tokio::sync::mpsc;

use crate::peers::PeerChannels;
use crate::snapshot_send;

const QUEUE_CAPACITY: usize = 4096;
const MAX_BATCH_MESSAGES: usize = 512;
const SEND_TIMEOUT: Duration = Duration::from_secs(2);
const BACKOFF_AFTER_FAILURE: Duration = Duration::from_millis(20);

pub struct GrpcTransport {
    queues: Mutex<HashMap<u64, mpsc::Sender<Message>>>,
    channels: Arc<PeerChannels>,
    group_id: u64,
    peer: Arc<OnceLock<PeerHandle>>,
    runtime: tokio::runtime::Handle,
}

impl GrpcTransport {
    /// `peer` is filled in once the local peer exists, so failures can be
    /// reported to it. Must be created inside a tokio runtime.
    pub fn new(
        channels: Arc<PeerChannels>,
        group_id: u64,
        peer: Arc<OnceLock<PeerHandle>>,
    ) -> Self {
        GrpcTransport {
            queues: Mutex::new(HashMap::new()),
            channels,
            group_id,
            peer,
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// The queue to `to`, starting its sender task on first use.
    fn queue(&self, to: u64) -> Option<mpsc::Sender<Message>> {
        let mut queues = self.queues.lock();
        if let Some(q) = queues.get(&to)
            && !q.is_closed()
        {
            return Some(q.clone());
        }
        let channel = self.channels.channel(to)?;
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let client = RaftClient::new(channel)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(64 << 20);
        let from = self.channels.self_id();
        self.runtime
            .spawn(pump(rx, client, self.group_id, from, to, self.peer.clone()));
        queues.insert(to, tx.clone());
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
                        let fut =
                            snapshot_send::send(peer.clone(), channel, self.group_id, from, m);
                        self.runtime.spawn(fut);
                    }
                    (Some(peer), None) => peer.report_snapshot(m.to, false),
                    _ => {}
                }
                continue;
            }
            if let Some(q) = self.queue(m.to) {
                let _ = q.try_send(m);
            }
        }
    }
}

async fn pump(
    mut rx: mpsc::Receiver<Message>,
    mut client: RaftClient<tonic::transport::Channel>,
    group_id: u64,
    from: u64,
    to: u64,
    peer: Arc<OnceLock<PeerHandle>>,
) {
    while let Some(first) = rx.recv().await {
        let mut messages = vec![Bytes::from(strata_raft::encode_message(&first))];
        while messages.len() < MAX_BATCH_MESSAGES {
            match rx.try_recv() {
                Ok(m) => messages.push(Bytes::from(strata_raft::encode_message(&m))),
                Err(_) => break,
            }
        }
        let mut request = tonic::Request::new(RaftBatch {
            group_id,
            from_node: from,
            to_node: to,
            messages,
        });
        request.set_timeout(SEND_TIMEOUT);
        if let Err(status) = client.send(request).await {
            tracing::debug!(to, error = %status, "raft send failed");
            if let Some(p) = peer.get() {
                p.report_unreachable(to);
            }
            tokio::time::sleep(BACKOFF_AFTER_FAILURE).await;
        }
    }
}
