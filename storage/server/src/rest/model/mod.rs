//! The JSON the REST API reads and answers with, as types. serde reads and
//! writes them on the wire and utoipa derives their schemas for the OpenAPI
//! document from the same definitions, so the document and the wire cannot
//! disagree.

pub mod cluster;
pub mod health;
pub mod kv;
pub mod kv_request;
pub mod lease;
pub mod range_event;
pub mod snapshot;
pub mod stats;
pub mod txn;
pub mod watch;
