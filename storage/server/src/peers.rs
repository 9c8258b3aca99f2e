//! Pooled gRPC channels to the other members, shared by the raft transport,
//! request forwarding and status gathering. A channel connects lazily and
//! reconnects by itself; one HTTP/2 connection per peer carries everything.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

/// The members of the cluster and a channel to each other one.
pub struct PeerChannels {
    self_id: u64,
    members: BTreeMap<u64, String>,
    channels: HashMap<u64, Channel>,
}

impl PeerChannels {
    /// Builds lazy channels; must run inside a tokio runtime.
    pub fn new(
        self_id: u64,
        members: BTreeMap<u64, String>,
    ) -> Result<Self, tonic::transport::Error> {
        let mut channels = HashMap::new();
        for (id, addr) in &members {
            if *id == self_id {
                continue;
            }
            let endpoint = Endpoint::from_shared(format!("http://{addr}"))?
                .connect_timeout(Duration::from_millis(250))
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(5))
                .keep_alive_timeout(Duration::from_secs(2))
                .keep_alive_while_idle(true);
            channels.insert(*id, endpoint.connect_lazy());
        }
        Ok(PeerChannels {
            self_id,
            members,
            channels,
        })
    }

    pub fn self_id(&self) -> u64 {
        self.self_id
    }

    pub fn members(&self) -> &BTreeMap<u64, String> {
        &self.members
    }

    pub fn address(&self, id: u64) -> Option<&str> {
        self.members.get(&id).map(String::as_str)
    }

    /// A channel to another member (cheap to clone).
    pub fn channel(&self, id: u64) -> Option<Channel> {
        self.channels.get(&id).cloned()
    }
}
