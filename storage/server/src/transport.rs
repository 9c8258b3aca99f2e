//! The outbound raft transport over the internal `strata.v1.Raft` service.
//!
//! One task per peer drains a bounded queue and sends whatever has piled up
//! as one batch, so a busy leader sends few, large RPCs. A full queue drops
//! messages, which raft tolerates; a failed send tells raft the peer is
//! unreachable.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use strata_proto::v1::RaftBatch;
use strata_proto::v1::raft_client::RaftClient;
use strata_raft::{Message, MessageType, PeerHandle, Transport};

use crate::snapshot_send;
use tokio::sync::mpsc;

use crate::peers::PeerChannels;

const QUEUE_CAPACITY: usize = 4096;
const MAX_BATCH_MESSAGES: usize = 512;
const SEND_TIMEOUT: Duration = Duration::from_secs(2);
const BACKOFF_AFTER_FAILURE: Duration = Duration::from_millis(20);

pub struct GrpcTransport {
    queues: HashMap<u64, mpsc::Sender<Message>>,
    channels: HashMap<u64, tonic::transport::Channel>,
    group_id: u64,
    from: u64,
    peer: Arc<OnceLock<PeerHandle>>,
    runtime: tokio::runtime::Handle,
}

impl GrpcTransport {
    /// Starts one sender task per peer. `peer` is filled in once the local
    /// peer exists, so failures can be reported to it.
    pub fn start(channels: &PeerChannels, group_id: u64, peer: Arc<OnceLock<PeerHandle>>) -> Self {
        let mut queues = HashMap::new();
        let mut snapshot_channels = HashMap::new();
        for &to in channels.members().keys() {
            let Some(channel) = channels.channel(to) else {
                continue;
            };
            snapshot_channels.insert(to, channel.clone());
            let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
            let client = RaftClient::new(channel)
                .max_decoding_message_size(64 << 20)
                .max_encoding_message_size(64 << 20);
            tokio::spawn(pump(
                rx,
                client,
                group_id,
                channels.self_id(),
                to,
                peer.clone(),
            ));
            queues.insert(to, tx);
        }
        GrpcTransport {
            queues,
            channels: snapshot_channels,
            group_id,
            from: channels.self_id(),
            peer,
            runtime: tokio::runtime::Handle::current(),
        }
    }
}

impl Transport for GrpcTransport {
    fn send(&self, messages: Vec<Message>) {
        for m in messages {
            if m.get_msg_type() == MessageType::MsgSnapshot {
                // Snapshots travel on their own stream so they never hold up
                // heartbeats and appends to other peers.
                match (self.peer.get(), self.channels.get(&m.to)) {
                    (Some(peer), Some(channel)) => {
                        let fut = snapshot_send::send(
                            peer.clone(),
                            channel.clone(),
                            self.group_id,
                            self.from,
                            m,
                        );
                        self.runtime.spawn(fut);
                    }
                    (Some(peer), None) => peer.report_snapshot(m.to, false),
                    _ => {}
                }
                continue;
            }
            if let Some(q) = self.queues.get(&m.to) {
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
