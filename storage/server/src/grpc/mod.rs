//! The gRPC front end: `strata.v1.KV`, `strata.v1.Cluster` and the internal
//! `strata.v1.Raft` transport.

pub mod cluster;
pub mod kv;
pub mod raft;
