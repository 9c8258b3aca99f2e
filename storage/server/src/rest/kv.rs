//! REST handlers of `/v1/kv`, `/v1/batch` and `/v1/cas`.

use axum::Json;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use percent_encoding::percent_decode_str;
use serde::Deserialize;
use serde_json::json;
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, Consistency, DeleteOp, DeleteRequest, GetRequest,
    KeyRange, PutOp, PutRequest, ResponseHeader, ScanRequest, batch_op, scan_request,
};

use super::AppState;
use super::body::{body_bytes, is_json, json_body, query, wants_json};
use super::encoding::{Encoding, decode_page_token, encode_page_token};
use crate::core::Hop;
use crate::error::{ApiError, LEADER_HEADER};

const KV_PREFIX: &str = "/v1/kv/";

/// The key is everything after `/v1/kv/`, percent-decoded to raw bytes, so
/// keys may hold `/` and any byte.
fn key_from_uri(uri: &Uri) -> Result<Bytes, ApiError> {
    let raw = uri.path().strip_prefix(KV_PREFIX).unwrap_or("");
    let key: Vec<u8> = percent_decode_str(raw).collect();
    if key.is_empty() {
        return Err(ApiError::invalid("key must not be empty"));
    }
    Ok(Bytes::from(key))
}

fn with_header(mut body: serde_json::Value, h: Option<ResponseHeader>) -> serde_json::Value {
    let h = h.unwrap_or_default();
    body["node_id"] = h.node_id.into();
    body["term"] = h.term.into();
    body["index"] = h.index.into();
    body["leader_id"] = h.leader_id.into();
    body
}

/// Adds `x-strata-node` / `x-strata-leader` (and the stale marker) to a response.
fn tag(mut resp: Response, h: Option<&ResponseHeader>, stale: bool) -> Response {
    if let Some(h) = h {
        let headers = resp.headers_mut();
        headers.insert("x-strata-node", HeaderValue::from(h.node_id));
        if h.leader_id != 0 {
            headers.insert(LEADER_HEADER, HeaderValue::from(h.leader_id));
        }
        if stale {
            headers.insert("x-strata-consistency", HeaderValue::from_static("stale"));
        }
    }
    resp
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    consistency: Option<ConsistencyParam>,
    encoding: Option<Encoding>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum ConsistencyParam {
    Linearizable,
    Stale,
}

impl ConsistencyParam {
    fn to_proto(self) -> Consistency {
        match self {
            ConsistencyParam::Linearizable => Consistency::Linearizable,
            ConsistencyParam::Stale => Consistency::Stale,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutJson {
    value: String,
    #[serde(default)]
    encoding: Encoding,
}

pub async fn put(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let key = key_from_uri(&uri)?;
    let value = if is_json(&headers) {
        let j: PutJson = json_body(&headers, body)?;
        Bytes::from(j.encoding.decode(&j.value, "value")?)
    } else {
        body_bytes(body)?
    };
    let resp = s.core.put(PutRequest { key, value }, Hop::Client).await?;
    let h = resp.header;
    Ok(tag(
        Json(with_header(json!({}), h)).into_response(),
        h.as_ref(),
        false,
    ))
}

pub async fn get(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    q: Result<Query<ReadQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let key = key_from_uri(&uri)?;
    let q = query(q)?;
    let consistency = q.consistency.unwrap_or(ConsistencyParam::Linearizable);
    let stale = consistency == ConsistencyParam::Stale;
    let resp = s
        .core
        .get(GetRequest {
            key: key.clone(),
            consistency: consistency.to_proto() as i32,
        })
        .await?;
    let h = resp.header;
    if !resp.found {
        return Ok(tag(
            ApiError::not_found("key not found").into_response(),
            h.as_ref(),
            stale,
        ));
    }
    let out = if wants_json(&headers) || q.encoding.is_some() {
        let items: [&[u8]; 2] = [&key, &resp.value];
        let enc = q.encoding.unwrap_or_default().for_output(items.into_iter());
        let body =
            json!({ "key": enc.encode(&key), "value": enc.encode(&resp.value), "encoding": enc });
        Json(with_header(body, h)).into_response()
    } else {
        let mut r = resp.value.into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        r
    };
    Ok(tag(out, h.as_ref(), stale))
}

pub async fn delete(State(s): State<AppState>, uri: Uri) -> Result<Response, ApiError> {
    let key = key_from_uri(&uri)?;
    let resp = s.core.delete(DeleteRequest { key }, Hop::Client).await?;
    let h = resp.header;
    Ok(tag(
        Json(with_header(json!({ "deleted": resp.deleted }), h)).into_response(),
        h.as_ref(),
        false,
    ))
}

/// `/v1/kv/` with nothing after it.
pub async fn empty_key() -> ApiError {
    ApiError::invalid("key must not be empty")
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ScanQuery {
    prefix: Option<String>,
    start: Option<String>,
    end: Option<String>,
    limit: Option<u32>,
    page_token: Option<String>,
    consistency: Option<ConsistencyParam>,
    keys_only: Option<bool>,
    encoding: Option<Encoding>,
}

pub async fn scan(
    State(s): State<AppState>,
    q: Result<Query<ScanQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
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
    let keys_only = q.keys_only.unwrap_or(false);
    let resp = s
        .core
        .scan(ScanRequest {
            selector,
            limit: q.limit.unwrap_or(0),
            page_token,
            consistency: consistency.to_proto() as i32,
            keys_only,
        })
        .await?;
    let h = resp.header;
    let enc = enc_in.for_output(
        resp.kvs
            .iter()
            .flat_map(|kv| [kv.key.as_ref(), kv.value.as_ref()]),
    );
    let kvs: Vec<serde_json::Value> = resp
        .kvs
        .iter()
        .map(|kv| {
            if keys_only {
                json!({ "key": enc.encode(&kv.key) })
            } else {
                json!({ "key": enc.encode(&kv.key), "value": enc.encode(&kv.value) })
            }
        })
        .collect();
    let body = json!({
        "kvs": kvs,
        "next_page_token": encode_page_token(&resp.next_page_token),
        "encoding": enc,
    });
    Ok(tag(
        Json(with_header(body, h)).into_response(),
        h.as_ref(),
        consistency == ConsistencyParam::Stale,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchJson {
    ops: Vec<OpJson>,
    #[serde(default)]
    encoding: Encoding,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpJson {
    op: OpKind,
    key: String,
    value: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum OpKind {
    Put,
    Delete,
}

pub async fn batch(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let j: BatchJson = json_body(&headers, body)?;
    let mut ops = Vec::with_capacity(j.ops.len());
    for (i, op) in j.ops.into_iter().enumerate() {
        let key = Bytes::from(j.encoding.decode(&op.key, &format!("ops[{i}].key"))?);
        let op = match (op.op, op.value) {
            (OpKind::Put, Some(v)) => batch_op::Op::Put(PutOp {
                key,
                value: Bytes::from(j.encoding.decode(&v, &format!("ops[{i}].value"))?),
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
    let resp = s.core.batch(BatchRequest { ops }, Hop::Client).await?;
    let h = resp.header;
    Ok(tag(
        Json(with_header(json!({}), h)).into_response(),
        h.as_ref(),
        false,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CasJson {
    key: String,
    #[serde(default)]
    expected: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    encoding: Encoding,
}

pub async fn cas(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let j: CasJson = json_body(&headers, body)?;
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
    let resp = s
        .core
        .compare_and_swap(
            CompareAndSwapRequest {
                key,
                expected,
                value,
            },
            Hop::Client,
        )
        .await?;
    let h = resp.header;
    let current: Option<&[u8]> = resp.current.as_deref();
    let enc = j.encoding.for_output(current.into_iter());
    let body = json!({
        "succeeded": resp.succeeded,
        "current": current.map(|c| enc.encode(c)),
        "encoding": enc,
    });
    Ok(tag(
        Json(with_header(body, h)).into_response(),
        h.as_ref(),
        false,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_percent_decoded_bytes() {
        let uri: Uri = "/v1/kv/a%2Fb/c%FF".parse().unwrap();
        assert_eq!(key_from_uri(&uri).unwrap().as_ref(), b"a/b/c\xff");
        let uri: Uri = "/v1/kv/".parse().unwrap();
        assert!(key_from_uri(&uri).is_err());
    }
}
