//! Pooled gRPC channels to the other members (`MemberChannels`), shared by
//! the raft transport, request forwarding and status gathering. Addresses
//! come from the raft peer's member directory, which configuration changes
//! keep current; a channel is made the first time a member is needed (and again if its
//! address changes), connects lazily and reconnects by itself.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata_raft::Members;
use strata_tls::rustls::ClientConfig;
use tonic::transport::{Channel, Endpoint, Uri};

/// The members of the cluster and a channel to each other one.
pub struct MemberChannels {
    self_id: u64,
    members: Members,
    channels: Mutex<HashMap<u64, (String, Channel)>>,
    /// With TLS: how to connect to the other members (`crate::tls_net`).
    tls: Option<Arc<ClientConfig>>,
}

fn lazy_channel(address: &str, tls: Option<Arc<ClientConfig>>) -> Option<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .ok()?
        .connect_timeout(Duration::from_millis(250))
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(2))
        .keep_alive_while_idle(true);
    match tls {
        None => Some(endpoint.connect_lazy()),
        Some(tls) => {
            let connector = tower::service_fn(move |uri: Uri| {
                crate::tls_net::connect(uri, &[], Some(tls.clone()))
            });
            Some(endpoint.connect_with_connector_lazy(connector))
        }
    }
}

impl MemberChannels {
    /// Must be used inside a tokio runtime (channels spawn their workers).
    pub fn new(self_id: u64, members: Members) -> Self {
        MemberChannels {
            self_id,
            members,
            channels: Mutex::new(HashMap::new()),
            tls: None,
        }
    }

    /// These channels, connecting with TLS (`crate::tls_net`).
    pub fn with_tls(mut self, tls: Option<Arc<ClientConfig>>) -> Self {
        self.tls = tls;
        self
    }

    pub fn self_id(&self) -> u64 {
        self.self_id
    }

    /// Every member by id, this node included.
    pub fn members(&self) -> BTreeMap<u64, String> {
        self.members.all()
    }

    pub fn address(&self, id: u64) -> Option<String> {
        self.members.address(id)
    }

    /// A channel to another member (cheap to clone), if its address is known.
    pub fn channel(&self, id: u64) -> Option<Channel> {
        if id == self.self_id {
            return None;
        }
        let address = self.members.address(id)?;
        let mut channels = self.channels.lock();
        if let Some((addr, ch)) = channels.get(&id)
            && *addr == address
        {
            return Some(ch.clone());
        }
        let ch = lazy_channel(&address, self.tls.clone())?;
        channels.insert(id, (address, ch.clone()));
        Some(ch)
    }

    /// A channel of its own to another member's raft peer: a connection
    /// that no other traffic shares, opened with the peer preface so the
    /// member serves it on its raft network threads (`peer_net`). HTTP/2
    /// shares one flow-control window among the streams of a connection
    /// and hands it to them in turn, so a small message queues behind
    /// megabytes already waiting on the same connection; one that must not
    /// (a heartbeat) needs its own. Its connection is driven by the runtime
    /// it is made in.
    pub fn peer_channel(&self, id: u64) -> Option<Channel> {
        if id == self.self_id {
            return None;
        }
        crate::peer_net::peer_channel(&self.members.address(id)?, self.tls.clone())
    }
}
