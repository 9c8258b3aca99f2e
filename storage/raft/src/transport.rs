//! The boundary between a peer and the network.

use raft::eraftpb::Message;

/// Delivers raft messages to other peers. Implementations must not block:
/// the peer's driver calls it from its loop. Messages may be dropped (raft
/// tolerates loss); an implementation that cannot reach a peer should say so
/// through [`crate::PeerHandle::report_unreachable`].
pub trait Transport: Send + 'static {
    fn send(&self, messages: Vec<Message>);
}
