//! The body of `POST /v1/txn` and its answer.
//!
//! The parser reads compares and operations as loose objects ([`CompareJson`],
//! [`TxnOpJson`]) so that a compare with no target or two, or an operation
//! missing a field it needs, is refused with a message naming its place;
//! the OpenAPI document states the language it accepts.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::kv::ResponseHeader;
use super::kv_request::{DeleteTag, PutTag};
use crate::rest::encoding::Encoding;

/// How a key's field compares with the given one (`field OP given`).
#[derive(Deserialize, Serialize, Clone, Copy, Default, PartialEq, Eq, Debug, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompareOpJson {
    #[default]
    Equal,
    NotEqual,
    Less,
    Greater,
}

/// One condition of a transaction: `key`, an `op` (default `equal`) and
/// exactly one target: `value` (compared bytewise; never holds for a key
/// that does not exist), `exists`, `create_index`, `mod_index` or `lease`
/// (0 for a key that does not exist). `exists` takes only `equal` and
/// `not_equal`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TxnCompare)]
pub struct CompareJson {
    /// A key (byte string in the request's `encoding`). Non-empty; at most
    /// 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub(crate) key: String,
    #[serde(default)]
    pub(crate) op: CompareOpJson,
    /// The value to compare with (in the request's `encoding`).
    #[serde(default)]
    pub(crate) value: Option<String>,
    /// Whether the key exists.
    #[serde(default)]
    pub(crate) exists: Option<bool>,
    /// The raft index that created the key.
    #[serde(default)]
    pub(crate) create_index: Option<u64>,
    /// The raft index that last put the key.
    #[serde(default)]
    pub(crate) mod_index: Option<u64>,
    /// The lease the key is under (0: none).
    #[serde(default)]
    pub(crate) lease: Option<u64>,
}

/// Body of POST /v1/txn.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TxnRequest)]
pub struct TxnJson {
    /// All must hold for `success` to run; none: `success` runs.
    #[serde(default)]
    #[schema(max_items = 10000)]
    pub(crate) compare: Vec<CompareJson>,
    /// Run, in order, when every compare holds; at most 128 gets and
    /// ranges.
    #[serde(default)]
    #[schema(value_type = Vec<TxnOpDoc>, max_items = 10000)]
    pub(crate) success: Vec<TxnOpJson>,
    /// Run, in order, when some compare does not hold; at most 128 gets
    /// and ranges.
    #[serde(default)]
    #[schema(value_type = Vec<TxnOpDoc>, max_items = 10000)]
    pub(crate) failure: Vec<TxnOpJson>,
    /// Encoding of every key, value and range bound in the request, and of
    /// the byte strings of the answer; default `utf8`.
    #[serde(default)]
    pub(crate) encoding: Encoding,
}

/// One operation as the parser reads it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TxnOpJson {
    pub(crate) op: TxnOpKind,
    pub(crate) key: Option<String>,
    pub(crate) value: Option<String>,
    pub(crate) start: Option<String>,
    pub(crate) end: Option<String>,
    pub(crate) limit: Option<u32>,
    pub(crate) lease: Option<u64>,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, Debug, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TxnOpKind {
    Put,
    Delete,
    Get,
    Range,
}

// The operations the parser accepts, as the OpenAPI document states them.

/// One operation of a transaction's branch, tagged by `op`.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
#[schema(
    as = TxnOp,
    discriminator(property_name = "op", mapping(
        ("put" = "#/components/schemas/TxnPutOp"),
        ("delete" = "#/components/schemas/TxnDeleteOp"),
        ("get" = "#/components/schemas/TxnGetOp"),
        ("range" = "#/components/schemas/TxnRangeOp"),
    )),
)]
pub enum TxnOpDoc {
    Put(TxnPutOp),
    Delete(TxnDeleteOp),
    Get(TxnGetOp),
    Range(TxnRangeOp),
}

/// Store `value` under `key`.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxnPutOp {
    #[schema(inline)]
    pub op: PutTag,
    /// Non-empty; at most 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub key: String,
    /// May be empty; at most 1 MiB once decoded.
    pub value: String,
    /// Put the key under this lease, which must exist (else the whole
    /// transaction is 404 NOT_FOUND and applies nothing); absent or 0: none.
    pub lease: Option<u64>,
}

/// Delete `key`; its result says whether it existed.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxnDeleteOp {
    #[schema(inline)]
    pub op: DeleteTag,
    /// Non-empty; at most 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub key: String,
}

/// Read `key` as the operations before it left it.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxnGetOp {
    #[schema(inline)]
    pub op: GetTag,
    /// Non-empty; at most 4 KiB once decoded.
    #[schema(min_length = 1)]
    pub key: String,
}

/// Read the keys in `[start, end)` as the operations before it left them.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxnRangeOp {
    #[schema(inline)]
    pub op: RangeTag,
    /// Inclusive start; default the first key.
    pub start: Option<String>,
    /// Exclusive end; absent or empty means the end of the key space.
    pub end: Option<String>,
    /// At most this many pairs; absent or 0 means 1000, the most. The
    /// ranges of one transaction also stop at about 4 MiB of keys and
    /// values together.
    #[schema(maximum = 1000)]
    pub limit: Option<u32>,
}

/// The `op` of a get.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GetTag {
    Get,
}

/// The `op` of a range.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RangeTag {
    Range,
}

/// A key with its value and the raft indexes that created and last put it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TxnKeyValue)]
pub struct TxnKeyValue {
    /// The key, in the result's `encoding`.
    pub key: String,
    /// The value, in the result's `encoding`.
    pub value: String,
    pub create_index: u64,
    pub mod_index: u64,
    /// The lease the key is under; 0 for none.
    pub lease: u64,
}

/// What one operation of the branch that ran produced, tagged by `op`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxnOpResultJson {
    pub op: TxnOpKind,
    /// For `delete`: whether the key existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub deleted: Option<bool>,
    /// For `get`: whether the key exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub found: Option<bool>,
    /// For `get` of a key that exists: the pair.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub kv: Option<TxnKeyValue>,
    /// For `range`: the pairs, in ascending byte order of key.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, max_items = 1000)]
    pub kvs: Option<Vec<TxnKeyValue>>,
    /// For `range`: whether keys of the range were left out by its limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub more: Option<bool>,
}

/// Result of POST /v1/txn. Returned with 200 whichever branch ran.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxnResult {
    /// Whether every compare held (and `success` ran).
    pub succeeded: bool,
    /// One per operation of the branch that ran, in order.
    pub results: Vec<TxnOpResultJson>,
    /// Encoding of every key and value in `results`.
    pub encoding: Encoding,
    #[serde(flatten)]
    pub header: ResponseHeader,
}
