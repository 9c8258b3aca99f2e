//! The receiving end of the internal raft transport.

use strata_proto::v1::raft_server::Raft;
use strata_proto::v1::{RaftAck, RaftBatch, SnapshotChunk};
use strata_raft::{Message, PeerHandle};
use tonic::{Request, Response, Status, Streaming};

use crate::snapshot_receive;

/// Checks a batch that arrived at node `id` of raft group `group_id` and
/// decodes its messages: the batch names this group and this node, and every
/// message decodes and is addressed to this node. Everything is decoded
/// before anything is stepped, so a malformed batch is rejected whole.
/// Errors are the sender's: NOT_FOUND for another group, INVALID_ARGUMENT
/// otherwise.
pub fn validate_batch(id: u64, group_id: u64, batch: &RaftBatch) -> Result<Vec<Message>, Status> {
    if batch.group_id != group_id {
        return Err(Status::not_found(format!(
            "node {id} does not hold raft group {}",
            batch.group_id
        )));
    }
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
        messages.push(m);
    }
    Ok(messages)
}

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
        let messages = validate_batch(self.id, self.group_id, &req.into_inner())?;
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

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    fn message_to(to: u64) -> Vec<u8> {
        let m = Message {
            to,
            from: 1,
            term: 3,
            ..Message::default()
        };
        strata_raft::encode_message(&m)
    }

    #[test]
    fn a_batch_is_accepted_only_whole_and_only_for_this_node() {
        // Proves: a batch for another group is NOT_FOUND; a wrong addressee,
        // an undecodable message or one addressed elsewhere is
        // INVALID_ARGUMENT; a good batch decodes every message.
        let good = RaftBatch {
            group_id: 1,
            from_node: 1,
            to_node: 2,
            messages: vec![message_to(2).into(), message_to(2).into()],
        };
        assert_eq!(validate_batch(2, 1, &good).unwrap().len(), 2);
        assert_eq!(
            validate_batch(2, 9, &good).unwrap_err().code(),
            Code::NotFound
        );
        assert_eq!(
            validate_batch(3, 1, &good).unwrap_err().code(),
            Code::InvalidArgument
        );
        let mut bad = good.clone();
        bad.messages.push(vec![0xff, 0xff, 0xff].into());
        assert_eq!(
            validate_batch(2, 1, &bad).unwrap_err().code(),
            Code::InvalidArgument
        );
        let mut elsewhere = good;
        elsewhere.messages.push(message_to(5).into());
        let e = validate_batch(2, 1, &elsewhere).unwrap_err();
        assert_eq!(e.message(), "raft message 2 is addressed to node 5");
    }
}
