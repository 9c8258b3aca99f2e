//! etcd v3 with the `etcd-client` crate: the same operations as Strata, mapped onto etcd's KV API
//! (a stale read is a serializable range, a scan is a range with a limit).
//!
//! By default each client balances over all endpoints, as etcd's own clients do; then two thirds of
//! the requests of a 3-member cluster reach a follower, which forwards writes (and the ReadIndex of
//! linearizable reads) to the leader. `leader_endpoint` finds the member that leads, so that a run
//! can send everything there instead.

use anyhow::{Context, bail};
use bytes::Bytes;
use etcd_client::{Client, ConnectOptions, GetOptions};
use std::time::Duration;

use super::{ReadConsistency, Target, TargetError};

pub struct EtcdTarget {
    clients: Vec<Client>,
}

impl EtcdTarget {
    /// Opens `connections` clients; each balances over all `endpoints` (`host:port`), as etcd
    /// clients do.
    pub async fn connect(
        endpoints: &[String],
        connections: usize,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut clients = Vec::with_capacity(connections);
        for _ in 0..connections.max(1) {
            let options = ConnectOptions::new()
                .with_connect_timeout(Duration::from_secs(2))
                .with_timeout(timeout);
            let client = Client::connect(endpoints, Some(options))
                .await
                .with_context(|| format!("etcd connect to {endpoints:?}"))?;
            clients.push(client);
        }
        Ok(EtcdTarget { clients })
    }

    fn kv(&self, conn: usize) -> etcd_client::KvClient {
        self.clients[conn % self.clients.len()].kv_client()
    }
}

/// The endpoint (of `endpoints`) whose member is etcd's current leader, from each member's
/// maintenance Status (its own member id in the header, the leader's id in the body).
pub async fn leader_endpoint(endpoints: &[String]) -> anyhow::Result<String> {
    let mut seen = Vec::with_capacity(endpoints.len());
    for endpoint in endpoints {
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(2));
        let mut client = Client::connect([endpoint], Some(options))
            .await
            .with_context(|| format!("etcd connect to {endpoint}"))?;
        let status = client
            .status()
            .await
            .with_context(|| format!("etcd status of {endpoint}"))?;
        let member = status
            .header()
            .map(|h| h.member_id())
            .with_context(|| format!("etcd status of {endpoint} has no header"))?;
        if member != 0 && member == status.leader() {
            return Ok(endpoint.clone());
        }
        seen.push(format!(
            "{endpoint}: member {member:x}, leader {:x}",
            status.leader()
        ));
    }
    bail!("no endpoint is etcd's leader ({})", seen.join("; "))
}

fn classify(e: etcd_client::Error) -> TargetError {
    match &e {
        etcd_client::Error::GRpcStatus(s) => TargetError::new(format!("{:?}", s.code()), &e),
        _ => TargetError::new("transport", &e),
    }
}

impl Target for EtcdTarget {
    async fn put(&self, conn: usize, key: Bytes, value: Bytes) -> Result<(), TargetError> {
        self.kv(conn)
            .put(key.to_vec(), value.to_vec(), None)
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn get(
        &self,
        conn: usize,
        key: Bytes,
        consistency: ReadConsistency,
    ) -> Result<bool, TargetError> {
        let options = match consistency {
            ReadConsistency::Linearizable => None,
            ReadConsistency::Stale => Some(GetOptions::new().with_serializable()),
        };
        self.kv(conn)
            .get(key.to_vec(), options)
            .await
            .map(|r| !r.kvs().is_empty())
            .map_err(classify)
    }

    async fn batch(&self, conn: usize, pairs: Vec<(Bytes, Bytes)>) -> Result<(), TargetError> {
        let puts: Vec<etcd_client::TxnOp> = pairs
            .into_iter()
            .map(|(k, v)| etcd_client::TxnOp::put(k.to_vec(), v.to_vec(), None))
            .collect();
        self.kv(conn)
            .txn(etcd_client::Txn::new().and_then(puts))
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn scan(
        &self,
        conn: usize,
        start: Bytes,
        end: Bytes,
        limit: u32,
    ) -> Result<usize, TargetError> {
        let options = GetOptions::new()
            .with_range(end.to_vec())
            .with_limit(i64::from(limit));
        self.kv(conn)
            .get(start.to_vec(), Some(options))
            .await
            .map(|r| r.kvs().len())
            .map_err(classify)
    }
}
