//! The Strata storage node: REST and gRPC front ends over one service core,
//! a raft peer per group, and the storage engine underneath.

#![forbid(unsafe_code)]

pub mod admission;
pub mod app;
pub mod auth;
pub mod backup;
pub mod balance;
pub mod canary;
pub mod channels;
pub mod cluster_name;
pub mod config;
pub mod console;
pub mod core;
pub mod deadline;
pub mod eds;
pub mod error;
pub mod event_log;
pub mod groups;
pub mod grpc;
pub mod join;
pub mod lessor;
pub mod log_snapshot;
pub mod lost_state;
pub mod member_status;
pub mod membership;
pub mod memcache;
pub mod metrics;
pub mod node;
pub mod peer_net;
pub mod range_events;
pub mod request_span;
pub mod resp;
pub mod rest;
pub mod restore;
pub mod retried;
pub mod route;
pub mod scan_views;
pub mod shutdown;
pub mod slow_requests;
pub mod snapshot_backoff;
pub mod snapshot_receive;
pub mod snapshot_send;
pub mod space;
pub mod stats;
pub mod tcp_front;
pub mod telemetry;
pub mod ticker;
pub mod tls_net;
pub mod transport;
pub mod validate;
pub mod watch;

pub use config::NodeConfig;
pub use node::{Stop, run};
