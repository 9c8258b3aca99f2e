//! The receiving end of the internal raft transport.

use std::sync::Arc;
use strata_proto::v1::raft_server::Raft;
use strata_proto::v1::{RaftAck, RaftBatch, SnapshotChunk};

use strata_raft::{Message, Stamp};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};

use crate::groups::Groups;
use crate::snapshot_receive;

/// Checks a batch that arrived at node `id` for a raft group it hosts and
/// decodes its messages: the batch names this node, and every message
/// decodes and is addressed to this node. Everything is decoded before
/// anything is stepped, so a malformed batch is rejected whole. Errors are
/// the sender's, INVALID_ARGUMENT (a batch for a group the node does not
/// host is NOT_FOUND, `RaftService`).
pub fn validate_batch(id: u64, batch: &RaftBatch) -> Result<Vec<Message>, Status> {
    if batch.to_node != id {
        return Err(Status::invalid_argument(format!(
            "batch addressed to node {} reached node {id}",
            batch.to_node
        )));
    }
    let mut messages = Vec::with_capacity(batch.messages.len());
    for (i, bytes) in batch.messages.iter().enumerate() {
        let m = strata_raft::decode_message(bytes).map_err(|e| {
            Status::invalid_argument(format!("raft message {i} does not decode: {e}"))
        })?;
        if m.to != id {
            return Err(Status::invalid_argument(format!(
                "raft message {i} is addressed to node {}",
                m.to
            )));
        }
        // The batch's stamp speaks for its sender: a message from anyone
        // else would have it say something of a member it does not know.
        if m.from != batch.from_node {
            return Err(Status::invalid_argument(format!(
                "raft message {i} is from node {}, in a batch from node {}",
                m.from, batch.from_node
            )));
        }
        messages.push(m);
    }
    Ok(messages)
}

/// The stamp a batch carries.
pub fn stamp_of(batch: &RaftBatch) -> Stamp {
    Stamp {
        incarnation: batch.from_incarnation,
        proven: batch.from_proven,
        to_incarnation: batch.to_incarnation,
        vouched: batch.vouched,
        cluster_id: batch.cluster_id,
    }
}

/// Refuses a batch from a member of another cluster: both sides know their
/// cluster's id, and the ids differ. A side that knows none yet (a cluster
/// whose first leader has not named it) is let through.
pub fn check_cluster(id: u64, ours: u64, batch: &RaftBatch) -> Result<(), Status> {
    if ours != 0 && batch.cluster_id != 0 && batch.cluster_id != ours {
        return Err(Status::failed_precondition(format!(
            "node {id} belongs to cluster {ours:016x}; the batch from node {} is from cluster {:016x}",
            batch.from_node, batch.cluster_id
        )));
    }
    Ok(())
}

#[derive(Clone)]
pub struct RaftService {
    id: u64,
    /// The groups this node hosts: each batch goes to the one it names.
    groups: Arc<Groups>,
    /// Turns true when the node stops: open streams end then, so they do
    /// not hold up a graceful shutdown.
    stopping: watch::Receiver<bool>,
    /// The largest snapshot this node accepts, in bytes.
    max_snapshot_bytes: u64,
}

impl RaftService {
    pub fn new(id: u64, groups: Arc<Groups>, stopping: watch::Receiver<bool>) -> Self {
        RaftService {
            id,
            groups,
            stopping,
            max_snapshot_bytes: u64::MAX,
        }
    }

    /// Refuses received snapshots over `bytes`.
    pub fn with_max_snapshot_bytes(mut self, bytes: u64) -> Self {
        self.max_snapshot_bytes = bytes;
        self
    }

    fn step_batch(&self, batch: &RaftBatch) -> Result<(), Status> {
        let stamp = stamp_of(batch);
        // Checked whole before a group is looked up (or started: a batch
        // for a group this node misses starts a replica of it), against the
        // cluster id every group of the cluster shares.
        let messages = validate_batch(self.id, batch)?;
        let ours = self
            .groups
            .first()
            .state_machine()
            .cluster_id()
            .map_err(|e| Status::unavailable(format!("reading the cluster id: {e}")))?;
        check_cluster(self.id, ours, batch)?;
        let Some(peer) = self.groups.adopt(batch.group_id) else {
            return Err(Status::not_found(format!(
                "node {} does not hold raft group {}",
                self.id, batch.group_id
            )));
        };
        for m in messages {
            peer.step(m, stamp);
        }
        Ok(())
    }
}

#[tonic::async_trait]
impl Raft for RaftService {
    async fn stream(
        &self,
        req: Request<Streaming<RaftBatch>>,
    ) -> Result<Response<RaftAck>, Status> {
        let mut batches = req.into_inner();
        let mut stopping = self.stopping.clone();
        loop {
            tokio::select! {
                batch = batches.message() => match batch? {
                    Some(batch) => self.step_batch(&batch)?,
                    None => return Ok(Response::new(RaftAck {})),
                },
                _ = stopping.wait_for(|stop| *stop) => {
                    return Err(Status::unavailable(format!("node {} is stopping", self.id)));
                }
            }
        }
    }

    async fn send(&self, req: Request<RaftBatch>) -> Result<Response<RaftAck>, Status> {
        self.step_batch(&req.into_inner())?;
        Ok(Response::new(RaftAck {}))
    }

    async fn install_snapshot(
        &self,
        req: Request<Streaming<SnapshotChunk>>,
    ) -> Result<Response<RaftAck>, Status> {
        snapshot_receive::receive(
            self.id,
            &self.groups,
            self.max_snapshot_bytes,
            req.into_inner(),
        )
        .await?;
        Ok(Response::new(RaftAck {}))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use strata_engine::{Engine, Options, WalMode};
    use strata_proto::v1::raft_client::RaftClient;
    use strata_proto::v1::raft_server::RaftServer;
    use strata_raft::{Peer, PeerConfig, StateMachine, Transport};
    use tokio::sync::mpsc;
    use tokio_stream::wrappers::ReceiverStream;
    use tonic::Code;

    use super::*;
    use crate::app::with_grpc;
    use crate::grpc::one_message::Requests;

    /// A single-voter group has no one to send to.
    struct Nowhere;

    impl Transport for Nowhere {
        fn send(&self, _messages: Vec<Message>) {}
    }

    /// A one-node group (node 1 of group 1) serving the raft service on a
    /// local port; returns its client, the stop switch, and what must live
    /// as long as the test.
    async fn serve_one_node() -> (
        RaftClient<tonic::transport::Channel>,
        watch::Sender<bool>,
        (Peer, tempfile::TempDir),
    ) {
        let (client, stop, (mut peers, dir)) = serve_groups(&[1]).await;
        (client, stop, (peers.remove(0), dir))
    }

    /// Node 1 hosting one-member groups `groups` on one engine, serving the
    /// raft service on a local port.
    async fn serve_groups(
        groups: &[u64],
    ) -> (
        RaftClient<tonic::transport::Channel>,
        watch::Sender<bool>,
        (Vec<Peer>, tempfile::TempDir),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(
            Engine::open(
                dir.path().join("engine"),
                Options {
                    wal: WalMode::Disabled,
                    ..Options::default()
                },
            )
            .unwrap(),
        );
        let peers: Vec<Peer> = groups
            .iter()
            .map(|&g| {
                let state_machine = Arc::new(StateMachine::new(engine.clone(), g));
                let config = PeerConfig::new(1, g, vec![1], dir.path().join(format!("raft-{g}")));
                Peer::start(config, state_machine, Nowhere).unwrap()
            })
            .collect();
        let registry = Groups::new(peers[0].handle());
        for p in &peers[1..] {
            registry.insert(p.handle());
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let service = RaftService::new(1, Arc::new(registry), stop_rx);
        let app = with_grpc(
            axum::Router::new(),
            RaftServer::new(service),
            Requests::OneExcept(&["Stream", "InstallSnapshot"]),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = RaftClient::connect(format!("http://{address}"))
            .await
            .unwrap();
        (client, stop_tx, (peers, dir))
    }

    /// Opens a `Raft/Stream` call; returns its sender and the pending answer.
    fn open_stream(
        client: &RaftClient<tonic::transport::Channel>,
    ) -> (
        mpsc::Sender<RaftBatch>,
        tokio::task::JoinHandle<Result<Response<RaftAck>, Status>>,
    ) {
        let (tx, rx) = mpsc::channel(4);
        let mut c = client.clone();
        let call = tokio::spawn(async move { c.stream(ReceiverStream::new(rx)).await });
        (tx, call)
    }

    fn batch_to(to: u64, group_id: u64) -> RaftBatch {
        RaftBatch {
            group_id,
            from_node: 2,
            to_node: to,
            messages: Vec::new(),
            ..RaftBatch::default()
        }
    }

    #[tokio::test]
    async fn a_batch_from_another_cluster_is_refused_once_this_one_is_named() {
        // Proves: before the cluster has an id a batch naming any passes;
        // once it is named, a batch naming another cluster is refused
        // (FAILED_PRECONDITION, both ids in the message), while one naming
        // this cluster, or none, passes.
        let (client, _stop, keep) = serve_one_node().await;
        let mut c = client.clone();
        let stranger = RaftBatch {
            cluster_id: 0xbad,
            ..batch_to(1, 1)
        };
        c.send(stranger.clone())
            .await
            .expect("unnamed: let through");
        let peer = keep.0.handle();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            match peer
                .propose(strata_raft::Command::ClusterId { id: 0x600d })
                .await
            {
                Ok((_, strata_raft::ApplyResult::ClusterId { id })) => {
                    assert_eq!(id, 0x600d);
                    break;
                }
                other => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "never named: {other:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        let refused = c.send(stranger).await.unwrap_err();
        assert_eq!(refused.code(), Code::FailedPrecondition, "{refused}");
        assert!(
            refused.message().contains("000000000000600d"),
            "{}",
            refused.message()
        );
        assert!(
            refused.message().contains("0000000000000bad"),
            "{}",
            refused.message()
        );
        c.send(RaftBatch {
            cluster_id: 0x600d,
            ..batch_to(1, 1)
        })
        .await
        .expect("this cluster's batch passes");
        c.send(batch_to(1, 1))
            .await
            .expect("a batch naming none passes");
    }

    #[tokio::test]
    async fn a_stream_takes_batches_until_one_is_refused_or_the_node_stops() {
        // Proves: a stream accepts good batches and ends when the sender
        // closes it (OK); the first refused batch ends it with that batch's
        // error; a node that stops ends its open streams (UNAVAILABLE)
        // rather than holding its shutdown up.
        let (client, stop, _keep) = serve_one_node().await;
        let within = Duration::from_secs(20);

        let (tx, call) = open_stream(&client);
        tx.send(batch_to(1, 1)).await.unwrap();
        tx.send(batch_to(1, 1)).await.unwrap();
        drop(tx);
        let answer = tokio::time::timeout(within, call).await.unwrap().unwrap();
        assert!(answer.is_ok(), "{answer:?}");

        for (bad, code) in [
            (batch_to(7, 1), Code::InvalidArgument),
            (batch_to(1, 9), Code::NotFound),
        ] {
            let (tx, call) = open_stream(&client);
            tx.send(batch_to(1, 1)).await.unwrap();
            tx.send(bad).await.unwrap();
            let status = tokio::time::timeout(within, call)
                .await
                .unwrap()
                .unwrap()
                .unwrap_err();
            assert_eq!(status.code(), code, "{status:?}");
        }

        let (tx, call) = open_stream(&client);
        tx.send(batch_to(1, 1)).await.unwrap();
        stop.send(true).unwrap();
        let status = tokio::time::timeout(within, call)
            .await
            .expect("the stream ended when the node stopped")
            .unwrap()
            .unwrap_err();
        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        drop(tx);
    }

    fn message_to(to: u64) -> Vec<u8> {
        let m = Message {
            to,
            from: 1,
            term: 3,
            ..Message::default()
        };
        strata_raft::encode_message(&m)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_batch_goes_to_the_group_it_names_if_the_node_hosts_it() {
        // Proves: a node hosting groups 1 and 2 takes a batch for either
        // (an empty one: nothing to step), and one for a group it does not
        // host is NOT_FOUND naming the group; so is a snapshot for it.
        let (client, _stop, _keep) = serve_groups(&[1, 2]).await;
        let mut c = client.clone();
        c.send(batch_to(1, 1)).await.expect("group 1");
        c.send(batch_to(1, 2)).await.expect("group 2");
        let refused = c.send(batch_to(1, 3)).await.unwrap_err();
        assert_eq!(refused.code(), Code::NotFound, "{refused}");
        assert_eq!(refused.message(), "node 1 does not hold raft group 3");
        let header = SnapshotChunk {
            kind: Some(strata_proto::v1::snapshot_chunk::Kind::Header(
                strata_proto::v1::SnapshotHeader {
                    group_id: 3,
                    from_node: 2,
                    to_node: 1,
                    ..Default::default()
                },
            )),
        };
        let refused = c
            .install_snapshot(tokio_stream::iter([header]))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::NotFound, "{refused}");
        assert_eq!(refused.message(), "node 1 does not hold raft group 3");
    }

    #[test]
    fn a_batch_is_accepted_only_whole_and_only_for_this_node() {
        // Proves: a wrong addressee, an undecodable message or one
        // addressed elsewhere is
        // INVALID_ARGUMENT; a good batch decodes every message.
        let good = RaftBatch {
            group_id: 1,
            from_node: 1,
            to_node: 2,
            messages: vec![message_to(2).into(), message_to(2).into()],
            ..RaftBatch::default()
        };
        assert_eq!(validate_batch(2, &good).unwrap().len(), 2);
        assert_eq!(
            validate_batch(3, &good).unwrap_err().code(),
            Code::InvalidArgument
        );
        let mut bad = good.clone();
        bad.messages.push(vec![0xff, 0xff, 0xff].into());
        assert_eq!(
            validate_batch(2, &bad).unwrap_err().code(),
            Code::InvalidArgument
        );
        let mut elsewhere = good.clone();
        elsewhere.messages.push(message_to(5).into());
        let e = validate_batch(2, &elsewhere).unwrap_err();
        assert_eq!(e.message(), "raft message 2 is addressed to node 5");
        let mut forwarded = good;
        forwarded.from_node = 3;
        let e = validate_batch(2, &forwarded).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert_eq!(
            e.message(),
            "raft message 0 is from node 1, in a batch from node 3"
        );
    }
}
