//! The systems a run can drive, behind one trait so the driver, histograms and summary are the
//! same for Strata (gRPC or REST) and etcd.

use std::future::Future;

use bytes::Bytes;

#[cfg(feature = "etcd")]
pub mod etcd;
pub mod grpc;
pub mod rest;

/// How a read may be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadConsistency {
    /// Strata: ReadIndex; etcd: linearizable range.
    Linearizable,
    /// Strata: `consistency=stale`; etcd: serializable range.
    Stale,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// Strata's gRPC API (`strata.v1.KV`), through Envoy or to one node.
    Grpc,
    /// Strata's REST API (`/v1/kv/...`), through Envoy or to one node.
    Rest,
    /// etcd v3 over gRPC (needs the `etcd` cargo feature).
    Etcd,
}

/// A failed request, classified so that the summary can count kinds of failure.
#[derive(Debug, Clone)]
pub struct TargetError {
    /// A short, stable label such as `UNAVAILABLE` or `http 503`.
    pub kind: String,
    pub message: String,
}

impl TargetError {
    pub fn new(kind: impl Into<String>, message: impl std::fmt::Display) -> Self {
        TargetError {
            kind: kind.into(),
            message: message.to_string(),
        }
    }
}

/// One connected system. `conn` picks one of the target's connections (a worker passes its own
/// index, so workers spread evenly over connections).
pub trait Target: Send + Sync + 'static {
    fn put(
        &self,
        conn: usize,
        key: Bytes,
        value: Bytes,
    ) -> impl Future<Output = Result<(), TargetError>> + Send;

    /// Returns whether the key was found.
    fn get(
        &self,
        conn: usize,
        key: Bytes,
        consistency: ReadConsistency,
    ) -> impl Future<Output = Result<bool, TargetError>> + Send;

    /// Puts every pair in one atomic request.
    fn batch(
        &self,
        conn: usize,
        pairs: Vec<(Bytes, Bytes)>,
    ) -> impl Future<Output = Result<(), TargetError>> + Send;

    /// Reads at most `limit` pairs of `[start, end)`; returns how many came back.
    fn scan(
        &self,
        conn: usize,
        start: Bytes,
        end: Bytes,
        limit: u32,
    ) -> impl Future<Output = Result<usize, TargetError>> + Send;
}
