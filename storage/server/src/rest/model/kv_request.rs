//! The KV request bodies and query strings the REST API reads, as the
//! types [`parse`](crate::rest::parse) deserializes them into; utoipa
//! derives their part of the OpenAPI document from the same definitions.

use serde::{Deserialize, Serialize};
use strata_proto::v1::Consistency;
use utoipa::{IntoParams, ToSchema};

use crate::rest::encoding::Encoding;

/// `linearizable` (default) uses ReadIndex; `stale` is served from the
/// answering replica's local state and the response carries
/// `x-strata-consistency: stale`.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Consistency)]
pub enum ConsistencyParam {
    Linearizable,
    Stale,
}

impl ConsistencyParam {
    pub(crate) fn to_proto(self) -> Consistency {
        match self {
            ConsistencyParam::Linearizable => Consistency::Linearizable,
            ConsistencyParam::Stale => Consistency::Stale,
        }
    }
}

/// The query of `GET /v1/kv/{key}`.
#[derive(Deserialize, Default, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReadQuery {
    /// Read consistency; default `linearizable`.
    pub(crate) consistency: Option<ConsistencyParam>,
    /// Encoding of byte strings in a JSON response; default `utf8`.
    /// Responses switch to `base64` on their own when some byte string is
    /// not valid UTF-8.
    pub(crate) encoding: Option<Encoding>,
}

/// The query of `GET /v1/kv`.
#[derive(Deserialize, Default, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ScanQuery {
    /// Only keys with this prefix (in `encoding`).
    pub(crate) prefix: Option<String>,
    /// Inclusive start of the range (in `encoding`).
    pub(crate) start: Option<String>,
    /// Exclusive end of the range (in `encoding`); absent or empty means the
    /// end of the key space.
    pub(crate) end: Option<String>,
    /// Maximum number of pairs; default 100, at most 1000 (both
    /// configurable). Out of range is INVALID_ARGUMENT.
    #[param(minimum = 1, maximum = 1000, default = 100)]
    pub(crate) limit: Option<u32>,
    /// `next_page_token` from a previous page: the page reads the state the
    /// first page read. A malformed token is INVALID_ARGUMENT; one whose
    /// state is no longer kept (a minute after the previous page, or on
    /// another node) is 410 PAGE_TOKEN_EXPIRED.
    pub(crate) page_token: Option<String>,
    /// Read consistency; default `linearizable`.
    pub(crate) consistency: Option<ConsistencyParam>,
    /// Return keys without values.
    #[param(default = false)]
    pub(crate) keys_only: Option<bool>,
    /// Encoding of the `prefix`, `start` and `end` values and of byte
    /// strings in the response; default `utf8`. The response switches to
    /// `base64` on its own when some byte string is not valid UTF-8.
    pub(crate) encoding: Option<Encoding>,
}

/// The query of `PUT /v1/kv/{key}`.
#[derive(Deserialize, Default, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PutQuery {
    /// Grant a lease of this TTL (`30s`, `1500ms`, `2m`; at least 1 s) and
    /// put the key under it, in one write: the key is deleted when the
    /// lease ends (`POST /v1/leases/{id}/keepalive` keeps it). The answer's
    /// `lease` names it. Not with `lease`.
    pub(crate) ttl: Option<String>,
    /// Put the key under this existing lease (404 NOT_FOUND if it does not
    /// exist). Without `lease` or `ttl`, a put takes the key off any lease.
    pub(crate) lease: Option<u64>,
}

/// JSON form of a PUT body (Content-Type: application/json).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PutJsonRequest)]
pub struct PutJson {
    /// A value (byte string in the request's `encoding`). May be empty; at
    /// most 1 MiB once decoded.
    pub(crate) value: String,
    /// Encoding of `value`; default `utf8`.
    #[serde(default)]
    pub(crate) encoding: Encoding,
}

/// Body of POST /v1/batch.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = BatchRequest)]
pub struct BatchJson {
    /// Applied atomically, in order.
    #[schema(value_type = Vec<BatchOpJson>, min_items = 1, max_items = 10000)]
    pub(crate) ops: Vec<OpJson>,
    /// Encoding of every key and value in `ops`; default `utf8`.
    #[serde(default)]
    pub(crate) encoding: Encoding,
}

/// One operation of a batch as the parser reads it: looser than the
/// language it accepts ([`BatchOpJson`]), so that a put without a value or a
/// delete with one is refused with a message naming the operation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpJson {
    pub(crate) op: OpKind,
    pub(crate) key: String,
    pub(crate) value: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(crate) enum OpKind {
    Put,
    Delete,
}

// The batch operations the parser accepts, as the OpenAPI document states
// them; the parser itself reads the looser `OpJson`.

/// One operation of a batch, tagged by `op`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(
    as = BatchOp,
    discriminator(property_name = "op", mapping(
        ("put" = "#/components/schemas/BatchPutOp"),
        ("delete" = "#/components/schemas/BatchDeleteOp"),
    )),
)]
pub enum BatchOpJson {
    Put(BatchPutOp),
    Delete(BatchDeleteOp),
}

/// Store `value` under `key`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchPutOp {
    #[schema(inline)]
    pub op: PutTag,
    /// A key (byte string in the request's `encoding`). Non-empty; at most
    /// 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub key: String,
    /// A value (byte string in the request's `encoding`). May be empty; at
    /// most 1 MiB once decoded.
    pub value: String,
}

/// Delete `key` (no error when absent).
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchDeleteOp {
    #[schema(inline)]
    pub op: DeleteTag,
    /// A key (byte string in the request's `encoding`). Non-empty; at most
    /// 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub key: String,
}

/// The `op` of a put.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PutTag {
    Put,
}

/// The `op` of a delete.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeleteTag {
    Delete,
}

/// Body of POST /v1/cas.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CasRequest)]
pub struct CasJson {
    /// A key (byte string in the request's `encoding`). Non-empty; at most
    /// 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub(crate) key: String,
    /// The value the key must currently hold; null or absent means the key
    /// must not exist.
    #[serde(default)]
    pub(crate) expected: Option<String>,
    /// The value to store on success; null or absent means delete the key
    /// on success.
    #[serde(default)]
    pub(crate) value: Option<String>,
    /// Encoding of `key`, `expected` and `value`; default `utf8`.
    #[serde(default)]
    pub(crate) encoding: Encoding,
}
