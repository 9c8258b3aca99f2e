//! The gRPC front end: `strata.v1.KV`, `strata.v1.Lease`, `strata.v1.Cluster` and the internal
//! `strata.v1.Raft` transport.

pub mod cluster;
pub mod kv;
pub mod lease;
pub mod one_message;
pub mod raft;

use tonic::Request;

use crate::core::{FORWARDED_HEADER, Hop};

/// Whether a request was already forwarded once by another node.
pub(crate) fn hop<T>(req: &Request<T>) -> Hop {
    if req.metadata().contains_key(FORWARDED_HEADER) {
        Hop::Forwarded
    } else {
        Hop::Client
    }
}
