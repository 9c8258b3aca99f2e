//! The receiving end of the internal raft transport.

use strata_proto::v1::raft_server::Raft;
use strata_proto::v1::{RaftAck, RaftBatch, SnapshotChunk};
use strata_raft::PeerHandle;
use tonic::{Request, Response, Status, Streaming};

use crate::snapshot_receive;

pub struct RaftService {
    id: u64,
    group_id: u64,
    peer: PeerHandle,
}

impl RaftService {
    pub fn new(id: u64, group_id: u64, peer: PeerHandle) -> Self {
        RaftService { id, group_id, peer }
    }
}

#[tonic::async_trait]
impl Raft for RaftService {
    async fn send(&self, req: Request<RaftBatch>) -> Result<Response<RaftAck>, Status> {
        let batch = req.into_inner();
        if batch.group_id != self.group_id {
            return Err(Status::not_found(format!(
                "node {} does not hold raft group {}",
                self.id, batch.group_id
            )));
        }
        if batch.to_node != self.id {
            return Err(Status::invalid_argument(format!(
                "batch addressed to node {} reached node {}",
                batch.to_node, self.id
            )));
        }
        // Decode everything first so a malformed batch is rejected whole.
        let mut messages = Vec::with_capacity(batch.messages.len());
        for (i, bytes) in batch.messages.iter().enumerate() {
            let m = strata_raft::decode_message(bytes).map_err(|e| {
                Status::invalid_argument(format!("raft message {i} does not decode: {e}"))
            })?;
            if m.to != self.id {
                return Err(Status::invalid_argument(format!(
                    "raft message {i} is addressed to node {}",
                    m.to
                )));
            }
            messages.push(m);
        }
        for m in messages {
            self.peer.step(m);
        }
        Ok(Response::new(RaftAck {}))
    }

    async fn install_snapshot(
        &self,
        req: Request<Streaming<SnapshotChunk>>,
    ) -> Result<Response<RaftAck>, Status> {
        snapshot_receive::receive(self.id, self.group_id, &self.peer, req.into_inner()).await?;
        Ok(Response::new(RaftAck {}))
    }
}
