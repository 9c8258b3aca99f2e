//! Endpoint discovery for the gateway: every node serves Envoy's
//! `EndpointDiscoveryService` (EDS over gRPC, state of the world) on its one
//! port, answering the gateway's member clusters (`nodes_leader`,
//! `nodes_any`) with the members of the raft configuration it has applied,
//! and pushing a new version to every stream when membership changes. So a
//! node added with `--join`, or removed, reaches the gateway without a
//! restart and without regenerating its config.
//!
//! - `assignment`: the members as endpoints, their version, and the
//!   `ClusterLoadAssignment` built from them (pure).
//! - `source`: the task that follows the raft peer and publishes the
//!   current endpoints (or why this node cannot vouch for them).
//! - `stream`: one stream's side of the xDS protocol (nonces, ACK, NACK).
//! - `service`: the tonic service.
//!
//! The service is internal, like the raft transport: the gateway never
//! routes it, and the node does not check a caller's role for it (it
//! tells what `GET /v1/cluster/members` tells a reader, and the port is
//! reachable by the members and the gateway alone).

pub mod assignment;
pub mod service;
pub mod source;
pub mod stream;

pub use assignment::Endpoints;

/// The prefix of the service's methods.
pub const PATH: &str = "/envoy.service.endpoint.v3.EndpointDiscoveryService/";
pub use service::EdsService;
