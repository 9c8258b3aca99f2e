//! Strata over gRPC with the `strata-client` library, one HTTP/2 connection per `conn`.

use anyhow::Context;
use bytes::Bytes;
use strata_client::{Client, ClientError, ScanSelector};

use super::{ReadConsistency, Target, TargetError};

pub struct GrpcTarget {
    clients: Vec<Client>,
}

impl GrpcTarget {
    /// Opens `connections` channels, spread round-robin over `endpoints` (`http://host:port`);
    /// with `request_ids`, every write carries an id of its own.
    pub async fn connect(
        endpoints: &[String],
        connections: usize,
        request_ids: bool,
    ) -> anyhow::Result<Self> {
        let mut clients = Vec::with_capacity(connections);
        for i in 0..connections.max(1) {
            let endpoint = &endpoints[i % endpoints.len()];
            let client = Client::connect(endpoint)
                .await
                .with_context(|| format!("gRPC connect to {endpoint}"))?;
            clients.push(if request_ids {
                client.with_request_ids()
            } else {
                client
            });
        }
        Ok(GrpcTarget { clients })
    }

    fn client(&self, conn: usize) -> &Client {
        &self.clients[conn % self.clients.len()]
    }
}

fn classify(e: ClientError) -> TargetError {
    match &e {
        ClientError::Status(s) => TargetError::new(format!("{:?}", s.code()), &e),
        ClientError::Connect { .. } => TargetError::new("connect", &e),
        // Backups and restores, which the bench never makes, and a token
        // it never sends.
        ClientError::Backup(_)
        | ClientError::Io(_)
        | ClientError::NotEmpty { .. }
        | ClientError::Token(_) => TargetError::new("other", &e),
    }
}

impl Target for GrpcTarget {
    async fn put(&self, conn: usize, key: Bytes, value: Bytes) -> Result<(), TargetError> {
        self.client(conn)
            .put(key, value)
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
        let stale = consistency == ReadConsistency::Stale;
        match self.client(conn).get(key, stale).await {
            Ok(v) => Ok(v.is_some()),
            // A node may answer an absent key with NOT_FOUND instead of `found = false`.
            Err(ClientError::Status(s)) if s.code() == tonic::Code::NotFound => Ok(false),
            Err(e) => Err(classify(e)),
        }
    }

    async fn batch(&self, conn: usize, pairs: Vec<(Bytes, Bytes)>) -> Result<(), TargetError> {
        let ops = pairs.into_iter().map(|(k, v)| (k, Some(v))).collect();
        self.client(conn)
            .batch(ops)
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
        let selector = ScanSelector::Range {
            start: start.to_vec(),
            end: end.to_vec(),
        };
        self.client(conn)
            .scan(selector, limit, Vec::new(), false)
            .await
            .map(|page| page.kvs.len())
            .map_err(classify)
    }
}
