//! One real node in this process, in a temporary directory (real engine,
//! real raft, one voter): its whole API called as a router (`router`) and
//! served on a port (`node`). What needs several nodes or the gateway stays
//! in `storage/harness/tests`.

mod auth;
mod backup;
mod canary;
mod deadlines;
mod groups;
mod leases;
mod memcache;
mod node;
mod pagination;
mod peer_net;
mod ranges;
mod request_ids;
mod resp;
mod router;
mod served;
mod snapshot;
mod stats;
mod support;
mod txn;
