//! REST request parsing as pure functions: the raw parts of a request (path,
//! query string, content type, body) in, the `strata.v1` request the service
//! core takes, or an [`ApiError`], out. The handlers in `kv.rs` read requests
//! only through these, so the fuzz targets in `storage/fuzz` exercise exactly
//! what the node runs. Limits are not checked here: `validate` does that
//! for REST and gRPC alike.

use bytes::Bytes;
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;
use strata_proto::v1::{
    BatchOp, BatchRequest, Compare, CompareAndSwapRequest, CompareOp, DeleteOp, DeleteRequest,
    GetOp, GetRequest, KeyRange, LeaseGrantRequest, PutOp, PutRequest, RangeOp, ScanRequest, TxnOp,
    TxnRequest, WatchRequest, batch_op, compare, scan_request, txn_op, watch_request,
};

use super::encoding::{Encoding, decode_page_token};
use super::model::kv_request::{
    BatchJson, CasJson, ConsistencyParam, OpKind, PutJson, PutQuery, ReadQuery, ScanQuery,
};
use super::model::lease::GrantJson;
use super::model::txn::{CompareJson, CompareOpJson, TxnJson, TxnOpJson, TxnOpKind};
use super::model::watch::WatchQuery;
use crate::error::{ApiError, ErrorCode};

/// Everything after this in a path is the key.
pub const KV_PREFIX: &str = "/v1/kv/";

/// How the reply to a request is rendered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplyFormat {
    /// The encoding the request named, if any.
    pub encoding: Option<Encoding>,
    /// Whether the read asked for stale data (the reply is marked so).
    pub stale: bool,
}

/// The key is everything after `/v1/kv/`, percent-decoded to raw bytes, so
/// keys may hold `/` and any byte. A path without the prefix has no key.
pub fn key_from_path(path: &str) -> Result<Bytes, ApiError> {
    let raw = path.strip_prefix(KV_PREFIX).unwrap_or("");
    let key: Vec<u8> = percent_decode_str(raw).collect();
    if key.is_empty() {
        return Err(ApiError::invalid("key must not be empty"));
    }
    Ok(Bytes::from(key))
}

/// Whether a `Content-Type` value is JSON (`application/json` or any
/// `application/*+json`, parameters and case ignored).
pub fn is_json(content_type: Option<&str>) -> bool {
    content_type
        .map(|v| {
            let mime = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// A JSON-only endpoint refuses any other media type.
pub fn require_json(content_type: Option<&str>) -> Result<(), ApiError> {
    if is_json(content_type) {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "this endpoint takes Content-Type: application/json",
        ))
    }
}

/// The body of a JSON-only endpoint.
pub fn json<T: DeserializeOwned>(content_type: Option<&str>, body: &[u8]) -> Result<T, ApiError> {
    require_json(content_type)?;
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("malformed JSON: {e}")))
}

/// A query string, parsed exactly as axum's `Query` extractor does (the
/// message names the offending field), so moving off the extractor changed
/// no response.
pub fn query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        ApiError::invalid(format!(
            "bad query: Failed to deserialize query string: {e}"
        ))
    })
}

/// `GET /v1/watch`: the selector and start of a watch, and the encoding
/// its query named. `last_event_id` is the `Last-Event-ID` header of an
/// event source reconnecting: the watch resumes after that index.
pub fn watch_request(
    query_string: &str,
    last_event_id: Option<&str>,
) -> Result<(WatchRequest, Option<Encoding>), ApiError> {
    let q: WatchQuery = query(query_string)?;
    let enc = q.encoding.unwrap_or_default();
    let ranged = q.start.is_some() || q.end.is_some();
    let chosen = [q.key.is_some(), q.prefix.is_some(), ranged];
    if chosen.iter().filter(|c| **c).count() > 1 {
        return Err(ApiError::invalid(
            "use one of key, prefix or start/end, not several",
        ));
    }
    let selector = if let Some(k) = &q.key {
        Some(watch_request::Selector::Key(Bytes::from(
            enc.decode(k, "key")?,
        )))
    } else if let Some(p) = &q.prefix {
        Some(watch_request::Selector::Prefix(Bytes::from(
            enc.decode(p, "prefix")?,
        )))
    } else if ranged {
        Some(watch_request::Selector::Range(KeyRange {
            start: Bytes::from(enc.decode(q.start.as_deref().unwrap_or(""), "start")?),
            end: Bytes::from(enc.decode(q.end.as_deref().unwrap_or(""), "end")?),
        }))
    } else {
        None
    };
    let mut from_index = match q.from_index {
        Some(0) => return Err(ApiError::invalid("from_index must be at least 1")),
        other => other.unwrap_or(0),
    };
    if let Some(id) = last_event_id {
        let last: u64 = id.trim().parse().map_err(|_| {
            ApiError::invalid(format!(
                "Last-Event-ID {id:?} is not an event id this server sent"
            ))
        })?;
        from_index = last + 1;
    }
    let request = WatchRequest {
        selector,
        from_index,
        progress_interval_ms: q.progress_ms.unwrap_or(0),
    };
    Ok((request, q.encoding))
}

/// `PUT /v1/kv/{key}`: the body is the value, or with a JSON content type
/// `{"value", "encoding"}`. Takes the body as `Bytes` so a raw value is
/// never copied.
pub fn put_request(
    path: &str,
    query_string: &str,
    content_type: Option<&str>,
    body: Bytes,
) -> Result<PutRequest, ApiError> {
    let key = key_from_path(path)?;
    let q: PutQuery = query(query_string)?;
    let ttl_ms = match q.ttl.as_deref() {
        None => 0,
        Some(text) => match ttl_millis(text)? {
            0 => return Err(ApiError::invalid(format!("`ttl` {text:?} is out of range"))),
            ms => ms,
        },
    };
    let value = if is_json(content_type) {
        let j: PutJson = json(content_type, &body)?;
        Bytes::from(j.encoding.decode(&j.value, "value")?)
    } else {
        body
    };
    Ok(PutRequest {
        key,
        value,
        request_id: String::new(),
        lease: q.lease.unwrap_or(0),
        ttl_ms,
    })
}

/// `GET /v1/kv/{key}?consistency=&encoding=`.
pub fn get_request(path: &str, query_string: &str) -> Result<(GetRequest, ReplyFormat), ApiError> {
    let key = key_from_path(path)?;
    let q: ReadQuery = query(query_string)?;
    let consistency = q.consistency.unwrap_or(ConsistencyParam::Linearizable);
    let request = GetRequest {
        key,
        consistency: consistency.to_proto() as i32,
    };
    let format = ReplyFormat {
        encoding: q.encoding,
        stale: consistency == ConsistencyParam::Stale,
    };
    Ok((request, format))
}

/// `DELETE /v1/kv/{key}`.
pub fn delete_request(path: &str) -> Result<DeleteRequest, ApiError> {
    Ok(DeleteRequest {
        key: key_from_path(path)?,
        request_id: String::new(),
    })
}

/// `GET /v1/kv?prefix= | start=&end=, limit, page_token, consistency,
/// keys_only, encoding`. The encoding applies to prefix, start and end.
pub fn scan_request(query_string: &str) -> Result<(ScanRequest, ReplyFormat), ApiError> {
    let q: ScanQuery = query(query_string)?;
    let enc_in = q.encoding.unwrap_or_default();
    if q.prefix.is_some() && (q.start.is_some() || q.end.is_some()) {
        return Err(ApiError::invalid(
            "use either prefix or start/end, not both",
        ));
    }
    let selector = if let Some(p) = &q.prefix {
        Some(scan_request::Selector::Prefix(Bytes::from(
            enc_in.decode(p, "prefix")?,
        )))
    } else if q.start.is_some() || q.end.is_some() {
        Some(scan_request::Selector::Range(KeyRange {
            start: Bytes::from(enc_in.decode(q.start.as_deref().unwrap_or(""), "start")?),
            end: Bytes::from(enc_in.decode(q.end.as_deref().unwrap_or(""), "end")?),
        }))
    } else {
        None
    };
    if q.limit == Some(0) {
        return Err(ApiError::invalid("limit must be at least 1"));
    }
    let page_token = match &q.page_token {
        Some(t) if !t.is_empty() => Bytes::from(decode_page_token(t)?),
        _ => Bytes::new(),
    };
    let consistency = q.consistency.unwrap_or(ConsistencyParam::Linearizable);
    let request = ScanRequest {
        selector,
        limit: q.limit.unwrap_or(0),
        page_token,
        consistency: consistency.to_proto() as i32,
        keys_only: q.keys_only.unwrap_or(false),
    };
    let format = ReplyFormat {
        encoding: q.encoding,
        stale: consistency == ConsistencyParam::Stale,
    };
    Ok((request, format))
}

/// `POST /v1/batch` with `{"ops": [{"op", "key", "value"?}], "encoding"}`:
/// a put needs a value, a delete takes none.
pub fn batch_request(content_type: Option<&str>, body: &[u8]) -> Result<BatchRequest, ApiError> {
    let j: BatchJson = json(content_type, body)?;
    let mut ops = Vec::with_capacity(j.ops.len());
    for (i, op) in j.ops.into_iter().enumerate() {
        let key = Bytes::from(j.encoding.decode(&op.key, &format!("ops[{i}].key"))?);
        let op = match (op.op, op.value) {
            (OpKind::Put, Some(v)) => batch_op::Op::Put(PutOp {
                key,
                value: Bytes::from(j.encoding.decode(&v, &format!("ops[{i}].value"))?),
                lease: 0,
            }),
            (OpKind::Put, None) => {
                return Err(ApiError::invalid(format!("ops[{i}]: a put needs a value")));
            }
            (OpKind::Delete, None) => batch_op::Op::Delete(DeleteOp { key }),
            (OpKind::Delete, Some(_)) => {
                return Err(ApiError::invalid(format!(
                    "ops[{i}]: a delete takes no value"
                )));
            }
        };
        ops.push(BatchOp { op: Some(op) });
    }
    Ok(BatchRequest {
        ops,
        request_id: String::new(),
    })
}

/// `POST /v1/cas` with `{"key", "expected"?, "value"?, "encoding"}`; the
/// encoding also renders the reply.
pub fn cas_request(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(CompareAndSwapRequest, Encoding), ApiError> {
    let j: CasJson = json(content_type, body)?;
    let key = Bytes::from(j.encoding.decode(&j.key, "key")?);
    let expected = j
        .expected
        .as_deref()
        .map(|e| j.encoding.decode(e, "expected").map(Bytes::from))
        .transpose()?;
    let value = j
        .value
        .as_deref()
        .map(|v| j.encoding.decode(v, "value").map(Bytes::from))
        .transpose()?;
    let request = CompareAndSwapRequest {
        key,
        expected,
        value,
        request_id: String::new(),
    };
    Ok((request, j.encoding))
}

/// `POST /v1/txn` with `{"compare", "success", "failure", "encoding"}`:
/// each compare has exactly one target, and each operation exactly the
/// fields its `op` takes. The encoding also renders the reply.
pub fn txn_request(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<(TxnRequest, Encoding), ApiError> {
    let j: TxnJson = json(content_type, body)?;
    let enc = j.encoding;
    let compare = j
        .compare
        .into_iter()
        .enumerate()
        .map(|(i, c)| txn_compare(enc, i, c))
        .collect::<Result<_, _>>()?;
    let success = txn_ops(enc, "success", j.success)?;
    let failure = txn_ops(enc, "failure", j.failure)?;
    let request = TxnRequest {
        compare,
        success,
        failure,
        request_id: String::new(),
    };
    Ok((request, enc))
}

fn txn_compare(enc: Encoding, i: usize, c: CompareJson) -> Result<Compare, ApiError> {
    let place = format!("compare[{i}]");
    let key = Bytes::from(enc.decode(&c.key, &format!("{place}.key"))?);
    let mut targets = Vec::new();
    if let Some(v) = &c.value {
        let v = enc.decode(v, &format!("{place}.value"))?;
        targets.push(compare::Target::Value(Bytes::from(v)));
    }
    if let Some(e) = c.exists {
        targets.push(compare::Target::Exists(e));
    }
    if let Some(n) = c.create_index {
        targets.push(compare::Target::CreateIndex(n));
    }
    if let Some(n) = c.mod_index {
        targets.push(compare::Target::ModIndex(n));
    }
    if let Some(n) = c.lease {
        targets.push(compare::Target::Lease(n));
    }
    if targets.len() != 1 {
        return Err(ApiError::invalid(format!(
            "{place}: a compare needs exactly one of value, exists, create_index, mod_index \
             and lease; it has {}",
            targets.len()
        )));
    }
    let op = match c.op {
        CompareOpJson::Equal => CompareOp::Equal,
        CompareOpJson::NotEqual => CompareOp::NotEqual,
        CompareOpJson::Less => CompareOp::Less,
        CompareOpJson::Greater => CompareOp::Greater,
    };
    Ok(Compare {
        key,
        op: op as i32,
        target: targets.pop(),
    })
}

fn txn_ops(enc: Encoding, branch: &str, ops: Vec<TxnOpJson>) -> Result<Vec<TxnOp>, ApiError> {
    let mut out = Vec::with_capacity(ops.len());
    for (i, o) in ops.into_iter().enumerate() {
        let place = format!("{branch}[{i}]");
        let field = |name: &str, v: Option<&String>| -> Result<Option<Bytes>, ApiError> {
            v.map(|v| enc.decode(v, &format!("{place}.{name}")).map(Bytes::from))
                .transpose()
        };
        let refuse = |what: &str| ApiError::invalid(format!("{place}: {what}"));
        let only = |allowed: &[&str]| -> Result<(), ApiError> {
            let given = [
                ("key", o.key.is_some()),
                ("value", o.value.is_some()),
                ("start", o.start.is_some()),
                ("end", o.end.is_some()),
                ("limit", o.limit.is_some()),
                ("lease", o.lease.is_some()),
            ];
            match given.iter().find(|(n, set)| *set && !allowed.contains(n)) {
                Some((n, _)) => Err(refuse(&format!("{:?} takes no `{n}`", o.op).to_lowercase())),
                None => Ok(()),
            }
        };
        let key = || {
            field("key", o.key.as_ref())?
                .ok_or_else(|| refuse(&format!("{:?} needs a key", o.op).to_lowercase()))
        };
        let op = match o.op {
            TxnOpKind::Put => {
                only(&["key", "value", "lease"])?;
                let value = field("value", o.value.as_ref())?
                    .ok_or_else(|| refuse("a put needs a value"))?;
                txn_op::Op::Put(PutOp {
                    key: key()?,
                    value,
                    lease: o.lease.unwrap_or(0),
                })
            }
            TxnOpKind::Delete => {
                only(&["key"])?;
                txn_op::Op::Delete(DeleteOp { key: key()? })
            }
            TxnOpKind::Get => {
                only(&["key"])?;
                txn_op::Op::Get(GetOp { key: key()? })
            }
            TxnOpKind::Range => {
                only(&["start", "end", "limit"])?;
                txn_op::Op::Range(RangeOp {
                    start: field("start", o.start.as_ref())?.unwrap_or_default(),
                    end: field("end", o.end.as_ref())?.unwrap_or_default(),
                    limit: o.limit.unwrap_or(0),
                })
            }
        };
        out.push(TxnOp { op: Some(op) });
    }
    Ok(out)
}

/// A `ttl` given as a duration (`30s`, `1500ms`), in milliseconds.
fn ttl_millis(text: &str) -> Result<u64, ApiError> {
    let ttl = humantime::parse_duration(text).map_err(|e| {
        ApiError::invalid(format!(
            "`ttl` {text:?} is not a duration (30s, 1500ms): {e}"
        ))
    })?;
    u64::try_from(ttl.as_millis())
        .map_err(|_| ApiError::invalid(format!("`ttl` {text:?} is out of range")))
}

/// `POST /v1/leases` with `{"ttl": "30s"}` or `{"ttl_ms": 30000}` (exactly
/// one), and an optional `"id"`.
pub fn lease_grant_request(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<LeaseGrantRequest, ApiError> {
    let j: GrantJson = json(content_type, body)?;
    let ttl_ms = match (j.ttl.as_deref(), j.ttl_ms) {
        (Some(text), None) => ttl_millis(text)?,
        (None, Some(ms)) => ms,
        _ => return Err(ApiError::invalid("give exactly one of `ttl` and `ttl_ms`")),
    };
    Ok(LeaseGrantRequest {
        ttl_ms,
        id: j.id.unwrap_or(0),
        request_id: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use axum::extract::Query;
    use axum::http::Uri;
    use strata_proto::v1::Consistency;

    use super::*;
    use crate::rest::model::kv_request::{
        BatchDeleteOp, BatchOpJson, BatchPutOp, DeleteTag, PutTag,
    };

    const JSON: Option<&str> = Some("application/json");

    #[test]
    fn keys_are_percent_decoded_bytes() {
        // Proves: a key may hold `/` and any byte, and an empty one is refused.
        assert_eq!(
            key_from_path("/v1/kv/a%2Fb/c%FF").unwrap().as_ref(),
            b"a/b/c\xff"
        );
        assert!(key_from_path("/v1/kv/").is_err());
        assert!(key_from_path("/elsewhere").is_err());
    }

    #[test]
    fn json_media_types_are_recognised() {
        // Proves: parameters and case do not matter, `+json` suffixes count.
        assert!(is_json(Some("application/json; charset=utf-8")));
        assert!(is_json(Some("APPLICATION/JSON")));
        assert!(is_json(Some("application/merge-patch+json")));
        assert!(!is_json(Some("text/plain")));
        assert!(!is_json(None));
    }

    #[test]
    fn query_errors_match_axums_query_extractor() {
        // Proves: the hand-rolled query parsing reports what axum's `Query`
        // did before, message for message.
        for q in [
            "consistency=sometimes",
            "limit=abc",
            "bogus=1",
            "limit=1&limit=2",
            "keys_only=maybe",
            "encoding=hex&prefix=a",
        ] {
            let uri: Uri = format!("/v1/kv?{q}").parse().unwrap();
            let axum = Query::<ScanQuery>::try_from_uri(&uri)
                .err()
                .map(|e| format!("bad query: {}", e.body_text()));
            let ours = query::<ScanQuery>(q).err().map(|e| e.message);
            assert_eq!(ours, axum, "{q}");
        }
    }

    #[test]
    fn put_takes_raw_or_json_bodies() {
        // Proves: a raw body is the value as is; a JSON body is decoded in
        // its encoding, and bad base64 or unknown fields are refused.
        let raw = put_request(
            "/v1/kv/k",
            "",
            Some("text/plain"),
            Bytes::from_static(b"{}"),
        )
        .unwrap();
        assert_eq!(raw.value.as_ref(), b"{}");
        let j = put_request(
            "/v1/kv/k",
            "",
            JSON,
            Bytes::from_static(br#"{"value":"aGk=","encoding":"base64"}"#),
        )
        .unwrap();
        assert_eq!((j.key.as_ref(), j.value.as_ref()), (&b"k"[..], &b"hi"[..]));
        for body in [
            &br#"{"value":"not base64!","encoding":"base64"}"#[..],
            br#"{"value":"x","bogus":1}"#,
            br#"{"value": "#,
        ] {
            let e = put_request("/v1/kv/k", "", JSON, Bytes::from_static(body)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument);
        }
    }

    #[test]
    fn reads_parse_consistency_and_encoding() {
        // Proves: stale reads are flagged for the reply, and an unknown
        // consistency is the client's error.
        let (req, format) = get_request("/v1/kv/k", "consistency=stale&encoding=base64").unwrap();
        assert_eq!(req.consistency, Consistency::Stale as i32);
        assert_eq!(
            format,
            ReplyFormat {
                encoding: Some(Encoding::Base64),
                stale: true
            }
        );
        let e = get_request("/v1/kv/k", "consistency=sometimes").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message.starts_with("bad query: "), "{}", e.message);
    }

    #[test]
    fn scan_queries_are_checked_before_the_core_sees_them() {
        // Proves: the REST-only scan rules (prefix xor range, limit of 0,
        // page token shape) are refused here.
        let (req, _) = scan_request("prefix=YQ==&encoding=base64&limit=5&keys_only=true").unwrap();
        assert_eq!(
            req.selector,
            Some(scan_request::Selector::Prefix(Bytes::from_static(b"a")))
        );
        assert_eq!((req.limit, req.keys_only), (5, true));
        let (req, _) = scan_request("end=b").unwrap();
        assert_eq!(
            req.selector,
            Some(scan_request::Selector::Range(KeyRange {
                start: Bytes::new(),
                end: Bytes::from_static(b"b"),
            }))
        );
        for (q, message) in [
            (
                "prefix=a&start=b",
                "use either prefix or start/end, not both",
            ),
            ("limit=0", "limit must be at least 1"),
            (
                "page_token=%25%25%25",
                "page_token is not a token this server issued",
            ),
        ] {
            assert_eq!(scan_request(q).unwrap_err().message, message, "{q}");
        }
    }

    #[test]
    fn batch_ops_need_a_value_exactly_when_they_put() {
        // Proves: a put without a value and a delete with one are refused,
        // naming the operation; a non-JSON body is an unsupported media type.
        let ok = batch_request(
            JSON,
            br#"{"ops":[{"op":"put","key":"a","value":"1"},{"op":"delete","key":"b"}]}"#,
        )
        .unwrap();
        assert_eq!(ok.ops.len(), 2);
        let e = batch_request(JSON, br#"{"ops":[{"op":"put","key":"a"}]}"#).unwrap_err();
        assert_eq!(e.message, "ops[0]: a put needs a value");
        let e =
            batch_request(JSON, br#"{"ops":[{"op":"delete","key":"a","value":"1"}]}"#).unwrap_err();
        assert_eq!(e.message, "ops[0]: a delete takes no value");
        let e = batch_request(Some("text/plain"), b"{}").unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedMediaType);
    }

    #[test]
    fn the_documented_batch_operations_parse() {
        // Proves: every operation written as the OpenAPI document describes
        // it (`BatchOpJson`) is accepted by the parser as that operation.
        let ops = [
            BatchOpJson::Put(BatchPutOp {
                op: PutTag::Put,
                key: "a".into(),
                value: "1".into(),
            }),
            BatchOpJson::Delete(BatchDeleteOp {
                op: DeleteTag::Delete,
                key: "b".into(),
            }),
        ];
        let body = serde_json::to_vec(&serde_json::json!({ "ops": ops })).unwrap();
        let req = batch_request(JSON, &body).unwrap();
        assert!(matches!(
            &req.ops[0].op,
            Some(batch_op::Op::Put(PutOp { key, value, .. })) if key == "a" && value == "1"
        ));
        assert!(matches!(
            &req.ops[1].op,
            Some(batch_op::Op::Delete(DeleteOp { key })) if key == "b"
        ));
    }

    #[test]
    fn cas_decodes_optional_values_in_its_encoding() {
        // Proves: absent expected/value stay absent, present ones are decoded.
        let (req, enc) =
            cas_request(JSON, br#"{"key":"aw==","expected":"","encoding":"base64"}"#).unwrap();
        assert_eq!(enc, Encoding::Base64);
        assert_eq!(req.key.as_ref(), b"k");
        assert_eq!(req.expected, Some(Bytes::new()));
        assert_eq!(req.value, None);
        let e = cas_request(JSON, br#"{"key":"x","bogus":1}"#).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn watch_reads_one_selector_and_resumes_after_the_last_event_id() {
        // Proves: each selector is read in its encoding, two of them are
        // refused, from_index 0 is refused, and a Last-Event-ID (an event
        // source reconnecting) starts the watch at the index after it,
        // over any from_index; one that is not an index is refused.
        let (req, _) = watch_request("key=YQ==&encoding=base64", None).unwrap();
        assert_eq!(req.selector, Some(watch_request::Selector::Key("a".into())));
        let (req, _) = watch_request("prefix=p/&from_index=7&progress_ms=250", None).unwrap();
        assert_eq!(
            req.selector,
            Some(watch_request::Selector::Prefix("p/".into()))
        );
        assert_eq!((req.from_index, req.progress_interval_ms), (7, 250));
        let (req, _) = watch_request("start=a", None).unwrap();
        assert_eq!(
            req.selector,
            Some(watch_request::Selector::Range(KeyRange {
                start: "a".into(),
                end: Bytes::new(),
            }))
        );
        let (req, _) = watch_request("", None).unwrap();
        assert_eq!((req.selector, req.from_index), (None, 0));
        let (req, _) = watch_request("prefix=p&from_index=7", Some("41")).unwrap();
        assert_eq!(req.from_index, 42);
        for (q, id) in [
            ("key=a&prefix=b", None),
            ("prefix=a&end=b", None),
            ("from_index=0", None),
            ("bogus=1", None),
            ("", Some("abc")),
        ] {
            let e = watch_request(q, id).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{q} {id:?}");
        }
    }
}
