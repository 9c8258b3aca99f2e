//! The service core: every KV operation, validated and routed once, behind
//! both the REST and the gRPC front ends so their behaviour cannot drift.
//!
//! Every key is served by one raft group, the one whose range holds it
//! (`crate::groups`): a request goes to the group serving its keys (`kv`),
//! and a batch or transaction naming keys of more than one is refused.
//! Writes are proposed on the group's leader. A follower forwards a write
//! once to that leader over the pooled channel (`forward`); a forwarded
//! request is never forwarded again. Reads are linearizable (ReadIndex, on
//! the group serving the key) unless they ask for stale. Beside the KV
//! operations (`kv`) live range splits (`split`), this node's own status
//! (`status`) and leadership transfer (`transfer`); membership changes are
//! in `crate::membership`.

mod forward;
mod kv;
mod lease;
mod split;
mod status;
mod transfer;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;

use strata_proto::v1::ResponseHeader;
use strata_raft::{ApplyResult, Command, Dedupe, PeerHandle, ProposeError};
use tonic::transport::Channel;

use crate::channels::MemberChannels;
use crate::config::{Limits, Timing};
use crate::error::{ApiError, ErrorCode};
use crate::groups::Groups;
use crate::lessor::Lessor;
use crate::scan_views::ScanViews;
use crate::validate;

pub use forward::FORWARDED_HEADER;
pub use lease::lease_not_found;

/// Whether a request may still be forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// From a client: a follower may forward it to the leader.
    Client,
    /// Already forwarded once: serve it here or fail.
    Forwarded,
}

pub struct Core {
    id: u64,
    /// The first group's peer: it keeps the leases, the membership and the
    /// cluster's name, and serves every key until a split.
    peer: PeerHandle,
    /// Every group hosted here, the first among them.
    groups: Arc<Groups>,
    channels: Arc<MemberChannels>,
    limits: Limits,
    timing: Timing,
    /// Requests sent on to the leader (`strata_api_forwarded_total`).
    forwarded: Counter,
    /// The test-only fault `--fault-stale-reads`: linearizable reads skip
    /// the ReadIndex round (see `crate::canary::fault`).
    stale_reads: bool,
    /// The views scans with more pages to come read from.
    scan_views: ScanViews,
    /// The leader's lease clock (`crate::lessor`).
    lessor: Arc<Lessor>,
    /// The `authorization` value this node sends with the requests it
    /// makes itself (`--token-file`).
    own_credential: Option<axum::http::HeaderValue>,
}

/// How a write ended: applied at `index` with `result`, by this request or,
/// when `replayed`, by an earlier one under the same request id.
pub(crate) struct Written {
    index: u64,
    result: ApplyResult,
    replayed: bool,
}

impl Written {
    fn of(index: u64, result: ApplyResult, request_id: &str) -> Result<Written, ApiError> {
        match result {
            ApplyResult::Replayed { index, result } => Ok(Written {
                index,
                result: *result,
                replayed: true,
            }),
            ApplyResult::IdReused { index } => Err(ApiError::new(
                ErrorCode::InvalidArgument,
                format!(
                    "request id {request_id:?} names another write, applied at index {index}; \
                     nothing was applied: give a new write a new id"
                ),
            )),
            ApplyResult::KeyNotInRange { key } => Err(ApiError::new(
                ErrorCode::Unavailable,
                format!(
                    "key {:?} is served by another range since a split; nothing was applied: \
                     retry",
                    String::from_utf8_lossy(&key)
                ),
            )),
            result => Ok(Written {
                index,
                result,
                replayed: false,
            }),
        }
    }
}

/// Where a write goes.
pub(crate) enum Route {
    Here,
    Leader(Channel),
}

impl Core {
    pub fn new(
        peer: PeerHandle,
        groups: Arc<Groups>,
        channels: Arc<MemberChannels>,
        limits: Limits,
        timing: Timing,
        forwarded: Counter,
    ) -> Self {
        let lessor = Lessor::new(peer.clone());
        Core {
            id: channels.self_id(),
            peer,
            groups,
            channels,
            limits,
            timing,
            forwarded,
            stale_reads: false,
            scan_views: ScanViews::default(),
            lessor,
            own_credential: None,
        }
    }

    /// With `token` sent along with the requests this node makes itself:
    /// its join request, its canary's operations when forwarded.
    pub fn with_own_token(mut self, token: Option<&str>) -> anyhow::Result<Self> {
        self.own_credential = token
            .map(|t| axum::http::HeaderValue::from_str(&format!("Bearer {}", t.trim())))
            .transpose()
            .map_err(|_| {
                anyhow::anyhow!("the node's token holds characters a header cannot carry")
            })?;
        Ok(self)
    }

    /// The `authorization` value of this node's own requests, if it has one.
    pub fn own_credential(&self) -> Option<axum::http::HeaderValue> {
        self.own_credential.clone()
    }

    /// The leader's lease clock; `crate::lessor::spawn` runs it.
    pub fn lessor(&self) -> &Arc<Lessor> {
        &self.lessor
    }

    /// With the test-only fault that serves linearizable reads from local
    /// state without confirming it is current, when `on`.
    pub fn with_stale_reads_fault(mut self, on: bool) -> Self {
        self.stale_reads = on;
        self
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The first group's peer.
    pub fn peer(&self) -> &PeerHandle {
        &self.peer
    }

    /// Every group this node hosts.
    pub fn groups(&self) -> &Arc<Groups> {
        &self.groups
    }

    /// The group serving `key` here.
    pub(crate) fn group_of(&self, key: &[u8]) -> Result<PeerHandle, ApiError> {
        self.groups.serving(key).ok_or_else(|| {
            ApiError::unavailable(format!(
                "the range holding key {:?} is not started on node {} yet (it was just split \
                 off another); retry",
                String::from_utf8_lossy(key),
                self.id
            ))
        })
    }

    /// The group a write goes to: the one serving the first key it names
    /// (the first group for a command naming none), which must serve every
    /// key it names. Leases are kept by the first group, so a write under a
    /// lease or a TTL is taken only for its keys.
    pub(crate) fn group_for(&self, command: &Command) -> Result<PeerHandle, ApiError> {
        let Some(anchor) = command.anchor() else {
            return Ok(self.peer.clone());
        };
        let group = self.group_of(anchor)?;
        let span = group
            .state_machine()
            .span()
            .map_err(|e| ApiError::new(ErrorCode::StorageFailed, e.to_string()))?;
        if let Some(key) = command.key_outside(&span) {
            return Err(ApiError::invalid(format!(
                "keys {:?} and {:?} are served by different ranges (this one ends at {:?}): \
                 a batch or a transaction names keys of one range; nothing was applied",
                String::from_utf8_lossy(anchor),
                String::from_utf8_lossy(&key),
                String::from_utf8_lossy(span.end.as_deref().unwrap_or_default())
            )));
        }
        self.lease_kept_by(&group, anchor, command.names_lease())?;
        Ok(group)
    }

    /// The group serving the one key a write names, `leased` when the write
    /// puts it under a lease or a TTL.
    pub(crate) fn group_for_key(&self, key: &[u8], leased: bool) -> Result<PeerHandle, ApiError> {
        let group = self.group_of(key)?;
        self.lease_kept_by(&group, key, leased)?;
        Ok(group)
    }

    /// Refuses a write under a lease to a group other than the first,
    /// which keeps the leases.
    fn lease_kept_by(&self, group: &PeerHandle, key: &[u8], leased: bool) -> Result<(), ApiError> {
        if leased && group.status().group_id != self.peer.status().group_id {
            return Err(ApiError::invalid(format!(
                "key {:?} is in a range split off the first, and leases (and TTLs, which grant \
                 one) are kept by the first range only: nothing was applied",
                String::from_utf8_lossy(key)
            )));
        }
        Ok(())
    }

    pub fn channels(&self) -> &MemberChannels {
        &self.channels
    }

    pub fn request_timeout(&self) -> Duration {
        self.timing.request_timeout()
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn header(&self, index: u64) -> ResponseHeader {
        self.header_in(&self.peer, index)
    }

    /// A header at `index` of `group`, with its term and leader.
    fn header_in(&self, group: &PeerHandle, index: u64) -> ResponseHeader {
        let st = group.status();
        ResponseHeader {
            node_id: self.id,
            term: st.term,
            index,
            leader_id: st.leader_id,
            replayed: false,
        }
    }

    /// The header of a write's answer: at its index, or at the index of
    /// the first write under its request id when this one replays it.
    fn write_header(&self, w: &Written) -> ResponseHeader {
        self.write_header_in(&self.peer, w)
    }

    fn write_header_in(&self, group: &PeerHandle, w: &Written) -> ResponseHeader {
        ResponseHeader {
            replayed: w.replayed,
            ..self.header_in(group, w.index)
        }
    }

    /// Where a request for the first group goes.
    pub(crate) fn route(&self, hop: Hop) -> Result<Route, ApiError> {
        self.route_in(&self.peer, hop)
    }

    /// Where a request for `group` goes: here on its leader, else to the
    /// member leading it (once).
    pub(crate) fn route_in(&self, group: &PeerHandle, hop: Hop) -> Result<Route, ApiError> {
        let st = group.status();
        if let Some(f) = st.failure {
            return Err(ApiError::storage(&f));
        }
        if group.draining() || self.peer.draining() {
            // The node is stopping: it neither proposes nor forwards, and
            // the gateway sends the request on to the leader.
            let leader = if st.leader_id == self.id {
                0
            } else {
                st.leader_id
            };
            return Err(
                ApiError::unavailable(format!("node {} is shutting down; retry", self.id))
                    .with_leader(leader, self.channels.address(leader)),
            );
        }
        if st.leader_id == self.id {
            return Ok(Route::Here);
        }
        if st.leader_id == 0 {
            return Err(ApiError::unavailable("no leader is known; retry shortly"));
        }
        let address = self.channels.address(st.leader_id);
        if hop == Hop::Forwarded {
            return Err(ApiError::unavailable("this node is no longer the leader")
                .with_leader(st.leader_id, address));
        }
        let channel = self.channels.channel(st.leader_id).ok_or_else(|| {
            ApiError::unavailable(format!("leader {} is not a known member", st.leader_id))
        })?;
        Ok(Route::Leader(channel))
    }

    /// Proposes `command` carrying the client's `request_id` (empty: none)
    /// and waits for its outcome until the request's deadline.
    async fn propose(&self, command: Command, request_id: &str) -> Result<Written, ApiError> {
        self.propose_in(&self.peer, command, request_id).await
    }

    /// [`propose`](Self::propose) on `group`.
    async fn propose_in(
        &self,
        group: &PeerHandle,
        command: Command,
        request_id: &str,
    ) -> Result<Written, ApiError> {
        let dedupe = validate::request_id(request_id)?.map(|id| {
            Dedupe::new(
                id.as_bytes().to_vec(),
                &command,
                self.timing.request_id_ttl_s.saturating_mul(1000),
            )
        });
        // Counted from when the node took the request (`crate::deadline`).
        let deadline = match crate::deadline::before_proposing() {
            Some(deadline) => deadline?,
            None => tokio::time::Instant::now() + self.timing.request_timeout(),
        };
        let proposed = group.propose_once(command, dedupe);
        match tokio::time::timeout_at(deadline, proposed).await {
            Ok(r) => {
                let (index, result) = r.map_err(|e| self.propose_error(e, true))?;
                Written::of(index, result, request_id)
            }
            Err(_) => {
                let st = group.status();
                tracing::warn!(
                    group = st.group_id,
                    timeout = ?self.timing.request_timeout(),
                    term = st.term,
                    commit = st.commit_index,
                    applied = st.applied_index,
                    last = st.last_index,
                    "a write was answered OUTCOME_UNKNOWN: it waited the whole request \
                     timeout (the raft log shows {} entries not yet committed and {} \
                     committed and not yet applied)",
                    st.last_index.saturating_sub(st.commit_index),
                    st.commit_index.saturating_sub(st.applied_index)
                );
                Err(ApiError::from_propose(ProposeError::Timeout, true))
            }
        }
    }

    fn propose_error(&self, e: ProposeError, write: bool) -> ApiError {
        let err = ApiError::from_propose(e, write);
        match err.leader_id {
            Some(id) => {
                let addr = self.channels.address(id);
                err.with_leader(id, addr)
            }
            None => err,
        }
    }
}
