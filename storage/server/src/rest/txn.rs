//! REST handler of `POST /v1/txn`: the request is read by
//! [`parse::txn_request`](super::parse::txn_request), run by the service
//! core, and rendered as [`model::txn`](super::model::txn).

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use strata_proto::v1::{KeyValue, txn_op_result};

use super::AppState;
use super::body::{content_type, json_bytes, parse_off_the_runtime};
use super::encoding::Encoding;
use super::kv::{request_id, tag};
use super::model::kv::ResponseHeader;
use super::model::txn::{TxnJson, TxnKeyValue, TxnOpKind, TxnOpResultJson, TxnResult};
use super::parse;
use super::responses::{Decimal, JsonBodyErrors, NotFound, WriteErrors};
use crate::core::Hop;
use crate::error::ApiError;

/// Run a transaction
///
/// Checks every compare against the current state; when all hold, runs
/// `success`, else `failure`. The branch's operations run in order, each
/// seeing the writes before it, and the whole transaction is decided and
/// applied atomically in one raft entry, so its reads are linearizable.
/// Keys carry the raft index that created them and the one that last put
/// them (returned by get, scan and here): compare `mod_index` for
/// optimistic concurrency.
#[utoipa::path(
    post,
    path = "/v1/txn",
    operation_id = "txn",
    tag = "kv",
    params(("x-strata-request-id" = Option<String>, Header, max_length = 128, description = "The client's id for this transaction (printable ASCII, at most 128 bytes). A retry with the same id, while the group remembers it (10 minutes by default), gets the first attempt's answer, reads included (`replayed: true`), and is never applied twice; another request under a remembered id is 400 INVALID_ARGUMENT. Through the gateway, a request carrying one is also retried after a 504.")),
    request_body(content((TxnJson = "application/json"))),
    responses(
        (status = 200, description = "The transaction ran at `index`; `succeeded` says which branch.", body = TxnResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        (status = 404, response = NotFound),
        WriteErrors,
        JsonBodyErrors,
    ),
)]
pub async fn txn(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = json_bytes(&headers, body)?;
    let ct = content_type(&headers).map(str::to_string);
    let (mut req, encoding) =
        parse_off_the_runtime(body, move |body| parse::txn_request(ct.as_deref(), &body)).await?;
    req.request_id = request_id(&headers)?;
    let resp = s.core.txn(req, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let pairs = resp.results.iter().flat_map(|r| match &r.result {
        Some(txn_op_result::Result::Get(g)) => g.kv.iter().collect::<Vec<_>>(),
        Some(txn_op_result::Result::Range(r)) => r.kvs.iter().collect(),
        _ => Vec::new(),
    });
    let encoding = encoding.for_output(pairs.flat_map(|kv| [kv.key.as_ref(), kv.value.as_ref()]));
    let results = resp
        .results
        .into_iter()
        .map(|r| result_json(r.result, encoding))
        .collect();
    let body = TxnResult {
        succeeded: resp.succeeded,
        results,
        encoding,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}

fn pair_json(kv: KeyValue, encoding: Encoding) -> TxnKeyValue {
    TxnKeyValue {
        key: encoding.encode(&kv.key),
        value: encoding.encode(&kv.value),
        create_index: kv.create_index,
        mod_index: kv.mod_index,
        lease: kv.lease,
    }
}

fn result_json(result: Option<txn_op_result::Result>, encoding: Encoding) -> TxnOpResultJson {
    use txn_op_result::Result as R;
    let empty = |op| TxnOpResultJson {
        op,
        deleted: None,
        found: None,
        kv: None,
        kvs: None,
        more: None,
    };
    match result {
        Some(R::Put(_)) | None => empty(TxnOpKind::Put),
        Some(R::Delete(d)) => TxnOpResultJson {
            deleted: Some(d.deleted),
            ..empty(TxnOpKind::Delete)
        },
        Some(R::Get(g)) => TxnOpResultJson {
            found: Some(g.found),
            kv: g.kv.map(|kv| pair_json(kv, encoding)),
            ..empty(TxnOpKind::Get)
        },
        Some(R::Range(r)) => TxnOpResultJson {
            kvs: Some(
                r.kvs
                    .into_iter()
                    .map(|kv| pair_json(kv, encoding))
                    .collect(),
            ),
            more: Some(r.more),
            ..empty(TxnOpKind::Range)
        },
    }
}
