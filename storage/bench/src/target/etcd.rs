//! etcd v3 with the `etcd-client` crate: the same operations as Strata, mapped onto etcd's KV API
//! (a stale read is a serializable range, a scan is a range with a limit).

use anyhow::Context;
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
