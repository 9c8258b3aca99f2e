//! Leases from the client: grant, revoke, inspect, keep alive, and puts
//! under a lease. [`KeepAlive`] keeps one lease alive from a task of its
//! own until it is dropped.

use std::time::Duration;

use bytes::Bytes;
use strata_proto::v1::{
    LeaseGrantRequest, LeaseGrantResponse, LeaseKeepAliveRequest, LeaseListRequest,
    LeaseRevokeRequest, LeaseStatus, LeaseTimeToLiveRequest, LeaseTimeToLiveResponse, PutRequest,
    ResponseHeader,
};
use tokio::sync::watch;

use crate::{Client, ClientError, once};

impl Client {
    /// Grants a lease of `ttl` (at least 1 s); `id` 0 lets the cluster
    /// pick its id.
    pub async fn lease_grant(
        &self,
        ttl: Duration,
        id: u64,
    ) -> Result<LeaseGrantResponse, ClientError> {
        let ttl_ms = ttl.as_millis().try_into().unwrap_or(u64::MAX);
        self.write(|request_id| {
            let req = once::request(
                LeaseGrantRequest {
                    ttl_ms,
                    id,
                    request_id: request_id.clone(),
                },
                &request_id,
            );
            let mut lease = self.lease.clone();
            async move { lease.grant(req).await }
        })
        .await
    }

    /// Ends lease `id` and deletes its keys; returns how many.
    pub async fn lease_revoke(&self, id: u64) -> Result<u64, ClientError> {
        let r = self
            .write(|request_id| {
                let req = once::request(
                    LeaseRevokeRequest {
                        id,
                        request_id: request_id.clone(),
                    },
                    &request_id,
                );
                let mut lease = self.lease.clone();
                async move { lease.revoke(req).await }
            })
            .await?;
        Ok(r.keys_deleted)
    }

    /// One keep-alive: lease `id`'s TTL runs again from now. `None` when
    /// the lease has ended.
    pub async fn lease_keep_alive_once(&self, id: u64) -> Result<Option<Duration>, ClientError> {
        let r = self
            .lease
            .clone()
            .keep_alive_once(LeaseKeepAliveRequest { id })
            .await?
            .into_inner();
        Ok((r.ttl_ms != 0).then(|| Duration::from_millis(r.ttl_ms)))
    }

    pub async fn lease_time_to_live(
        &self,
        id: u64,
        keys: bool,
    ) -> Result<LeaseTimeToLiveResponse, ClientError> {
        Ok(self
            .lease
            .clone()
            .time_to_live(LeaseTimeToLiveRequest { id, keys })
            .await?
            .into_inner())
    }

    /// Every lease, by the leader's clock.
    pub async fn leases(&self) -> Result<Vec<LeaseStatus>, ClientError> {
        Ok(self
            .lease
            .clone()
            .list(LeaseListRequest {})
            .await?
            .into_inner()
            .leases)
    }

    /// Puts `key` under lease `lease`, which must exist.
    pub async fn put_with_lease(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        lease: u64,
    ) -> Result<ResponseHeader, ClientError> {
        let r = self.put_request(key.into(), value.into(), lease, 0).await?;
        Ok(r.0)
    }

    /// Puts `key` under a lease of its own, of `ttl`, granted in the same
    /// write; returns the lease's id with the header.
    pub async fn put_with_ttl(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        ttl: Duration,
    ) -> Result<(ResponseHeader, u64), ClientError> {
        let ttl_ms = ttl.as_millis().try_into().unwrap_or(u64::MAX);
        self.put_request(key.into(), value.into(), 0, ttl_ms).await
    }

    async fn put_request(
        &self,
        key: Bytes,
        value: Bytes,
        lease: u64,
        ttl_ms: u64,
    ) -> Result<(ResponseHeader, u64), ClientError> {
        let r = self
            .write(|request_id| {
                let req = once::request(
                    PutRequest {
                        key: key.clone(),
                        value: value.clone(),
                        request_id: request_id.clone(),
                        lease,
                        ttl_ms,
                    },
                    &request_id,
                );
                let mut kv = self.kv.clone();
                async move { kv.put(req).await }
            })
            .await?;
        Ok((r.header.unwrap_or_default(), r.lease))
    }

    /// Keeps lease `id` alive from a task of its own, a keep-alive every
    /// third of its TTL (and again a second later after a failed one),
    /// until the handle is dropped or the lease has ended.
    pub fn keep_alive(&self, id: u64, ttl: Duration) -> KeepAlive {
        let (ended_tx, ended) = watch::channel(false);
        let client = self.clone();
        let task = tokio::spawn(async move {
            let mut every = ttl / 3;
            loop {
                tokio::time::sleep(every).await;
                match client.lease_keep_alive_once(id).await {
                    Ok(Some(ttl)) => every = ttl / 3,
                    Ok(None) => {
                        let _ = ended_tx.send(true);
                        return;
                    }
                    Err(_) => every = Duration::from_secs(1).min(ttl / 3),
                }
            }
        });
        KeepAlive { task, ended }
    }
}

/// Keeps a lease alive while it lives (`Client::keep_alive`).
pub struct KeepAlive {
    task: tokio::task::JoinHandle<()>,
    ended: watch::Receiver<bool>,
}

impl KeepAlive {
    /// Waits until the lease has ended (its keys are gone).
    pub async fn ended(&mut self) {
        let _ = self.ended.wait_for(|e| *e).await;
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        self.task.abort();
    }
}
