//! The JSON the REST API answers with, as types. serde writes them on the
//! wire and utoipa derives their schemas for the OpenAPI document from the
//! same definitions, so the document and the answers cannot disagree. The
//! request bodies and query strings the API reads are typed where they are
//! parsed, in [`parse`](super::parse) and the handlers.

pub mod cluster;
pub mod health;
pub mod kv;
