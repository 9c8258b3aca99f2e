//! The bodies and answers of `/v1/leases`.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::kv::ResponseHeader;
use crate::rest::encoding::Encoding;

/// Body of POST /v1/leases: exactly one of `ttl` and `ttl_ms`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = LeaseGrantRequest)]
pub struct GrantJson {
    /// The TTL as a duration: `30s`, `1500ms`, `2m` (at least 1 s, at most
    /// a year).
    #[serde(default)]
    pub(crate) ttl: Option<String>,
    /// The TTL in milliseconds.
    #[serde(default)]
    #[schema(minimum = 1000)]
    pub(crate) ttl_ms: Option<u64>,
    /// The lease's id, 1 to 2^53 - 1 (409 ALREADY_EXISTS if taken); absent:
    /// the cluster picks one.
    #[serde(default)]
    pub(crate) id: Option<u64>,
}

/// A lease as granted or kept alive.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseResult {
    pub id: u64,
    /// Its TTL, counted again from this answer.
    pub ttl_ms: u64,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// Result of DELETE /v1/leases/{id}.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeResult {
    /// How many keys under the lease were deleted.
    pub keys_deleted: u64,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// The query of GET /v1/leases/{id}.
#[derive(Deserialize, Default, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LeaseQuery {
    /// Also list the keys under the lease.
    #[param(default = false)]
    pub(crate) keys: Option<bool>,
    /// Encoding of the keys; default `utf8` (base64 on its own when some
    /// key is not valid UTF-8).
    pub(crate) encoding: Option<Encoding>,
}

/// Result of GET /v1/leases/{id}.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeToLiveResult {
    pub id: u64,
    /// The TTL it was granted with.
    pub ttl_ms: u64,
    /// How long until the leader ends it, without a keep-alive.
    pub remaining_ms: u64,
    /// With `keys=true`: the keys under it, in `encoding`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub keys: Option<Vec<String>>,
    pub encoding: Encoding,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// One lease in GET /v1/leases.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseStatus {
    pub id: u64,
    pub ttl_ms: u64,
    pub remaining_ms: u64,
}

/// Result of GET /v1/leases.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseList {
    /// Every lease, by id.
    pub leases: Vec<LeaseStatus>,
    #[serde(flatten)]
    pub header: ResponseHeader,
}
