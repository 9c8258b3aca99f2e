//! The bodies of strata-server's fuzz targets: the node's API request
//! parsing (REST and gRPC), the checks every KV request passes, and the
//! raft transport's batch check. Each takes arbitrary bytes and must never
//! panic (other than by the assertions below), and every refusal must be the
//! client's error (4xx), never the server's. Their seeds are files in
//! `corpus/<target>/` (`tests/fuzz_seeds.rs` writes and checks them).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use serde_json::json;
use strata_proto::v1::{
    BatchRequest, CompareAndSwapRequest, Consistency, DeleteRequest, GetRequest, LeaseGrantRequest,
    PutRequest, RaftBatch, ScanRequest, TxnRequest, WatchRequest, batch_op, scan_request,
    watch_request,
};
use strata_raft::Op;
use strata_server::config::Limits;
use strata_server::error::ApiError;
use strata_server::grpc::raft::validate_batch;
use strata_server::rest::encoding::Encoding;
use strata_server::rest::parse::{self, ReplyFormat};
use strata_server::validate;
use tonic::Code;

/// The REST routes `rest_request` drives, picked by the input's first byte.
pub const ROUTES: [Route; 9] = [
    Route::Put,
    Route::Get,
    Route::Delete,
    Route::Scan,
    Route::Batch,
    Route::Cas,
    Route::Watch,
    Route::Txn,
    Route::LeaseGrant,
];

/// One REST KV endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `PUT /v1/kv/{key}`
    Put,
    /// `GET /v1/kv/{key}`
    Get,
    /// `DELETE /v1/kv/{key}`
    Delete,
    /// `GET /v1/kv?…`
    Scan,
    /// `POST /v1/batch`
    Batch,
    /// `POST /v1/cas`
    Cas,
    /// `GET /v1/watch?…`; the body, when any, is its `Last-Event-ID`.
    Watch,
    /// `POST /v1/txn`
    Txn,
    /// `POST /v1/leases`
    LeaseGrant,
}

/// `Content-Type` values `rest_request` picks from (the low 3 bits of the
/// flags byte): JSON spelled several ways, and several things that are not.
pub const CONTENT_TYPES: [Option<&str>; 8] = [
    None,
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some("Application/Merge-Patch+JSON"),
    Some("text/plain"),
    Some("application/octet-stream"),
    Some("application/jsonx"),
    Some(""),
];

/// Flag bit: use the input's path as given instead of prefixing `/v1/kv/`.
pub const RAW_PATH: u8 = 8;

/// Builds a `rest_request` input: route, flags, then the path and query
/// (`path?query`, or just the query for a scan) up to the first newline,
/// then the body.
pub fn rest_input(route: Route, flags: u8, head: &str, body: &[u8]) -> Vec<u8> {
    let index = ROUTES.iter().position(|r| *r == route).unwrap_or(0);
    let mut v = vec![index as u8, flags];
    v.extend_from_slice(head.as_bytes());
    v.push(b'\n');
    v.extend_from_slice(body);
    v
}

/// The limits every parsed request is checked against: the node's defaults,
/// and small ones whose edges short inputs reach.
fn limits() -> [Limits; 2] {
    [
        Limits::default(),
        Limits {
            max_key_bytes: 8,
            max_value_bytes: 16,
            max_request_bytes: 1024,
            max_batch_ops: 3,
            default_scan_limit: 5,
            max_scan_limit: 20,
            max_write_bytes_in_flight: 1024,
            write_stall_wait_ms: 0,
        },
    ]
}

/// A refusal is the client's fault: a 4xx with a message, and on gRPC
/// INVALID_ARGUMENT or NOT_FOUND.
fn assert_client_error(e: &ApiError) {
    assert!(
        e.code.http_status().is_client_error(),
        "not a 4xx: {e} ({})",
        e.code.http_status()
    );
    assert!(!e.message.is_empty(), "error without a message: {e:?}");
    assert!(
        matches!(e.code.grpc_code(), Code::InvalidArgument | Code::NotFound),
        "unexpected gRPC code for {e}"
    );
}

/// The value of `r`, or `None` after checking the error is the client's.
fn accepted<T>(r: Result<T, ApiError>) -> Option<T> {
    r.map_err(|e| assert_client_error(&e)).ok()
}

fn assert_key_fits(limits: &Limits, key: &[u8]) {
    assert!(!key.is_empty(), "validated key is empty");
    assert!(
        key.len() <= limits.max_key_bytes,
        "validated key over the limit"
    );
}

fn assert_value_fits(limits: &Limits, value: &[u8]) {
    assert!(
        value.len() <= limits.max_value_bytes,
        "validated value over the limit"
    );
}

/// The path that addresses `key`: every byte percent-encoded.
fn key_path(key: &[u8]) -> String {
    let mut path = parse::KV_PREFIX.to_string();
    for b in key {
        path.push_str(&format!("%{b:02X}"));
    }
    path
}

const JSON: Option<&str> = Some("application/json");

/// REST request parsing, then validation. The input is split into a route
/// selector, a flags byte (content type, raw path), a `path?query` and a
/// body. Parsing and validation never panic and refuse only with 4xx
/// errors. What parses has a non-empty key that the percent-encoded path
/// gives back; re-serialized (JSON bodies in base64, query strings) it
/// parses to the same request; a raw put body is the value byte for byte.
/// What validates has keys and values within the limits, a batch of 1 to
/// `max_batch_ops` operations matching the request, and scan bounds that
/// respect the limit, the range and the page token.
pub fn rest_request(data: &[u8]) {
    let [route, flags, rest @ ..] = data else {
        return;
    };
    let (head, body) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let head = String::from_utf8_lossy(head);
    let head: &str = &head;
    let content_type = CONTENT_TYPES[usize::from(flags & 7)];
    let (path, query) = head.split_once('?').unwrap_or((head, ""));
    let path = if flags & RAW_PATH == 0 {
        format!("{}{path}", parse::KV_PREFIX)
    } else {
        path.to_string()
    };
    match ROUTES[usize::from(*route) % ROUTES.len()] {
        Route::Put => rest_put(&path, query, content_type, body),
        Route::Get => rest_get(&path, query),
        Route::Delete => rest_delete(&path),
        Route::Scan => rest_scan(head),
        Route::Batch => rest_batch(content_type, body),
        Route::Cas => rest_cas(content_type, body),
        Route::Watch => rest_watch(head, body),
        Route::Txn => rest_txn(content_type, body),
        Route::LeaseGrant => {
            if let Some(req) = accepted(parse::lease_grant_request(content_type, body)) {
                check_lease_grant(&req);
            }
        }
    }
}

fn assert_key_round_trips(key: &Bytes) {
    assert!(!key.is_empty(), "parsed key is empty");
    let again = parse::key_from_path(&key_path(key)).expect("encoded key parses");
    assert_eq!(&again, key, "key does not round-trip through the path");
}

fn rest_put(path: &str, query: &str, content_type: Option<&str>, body: &[u8]) {
    let Some(req) = accepted(parse::put_request(
        path,
        query,
        content_type,
        Bytes::copy_from_slice(body),
    )) else {
        return;
    };
    assert_key_round_trips(&req.key);
    if parse::is_json(content_type) {
        let mut bodies =
            vec![json!({ "value": STANDARD.encode(&req.value), "encoding": "base64" })];
        if let Ok(text) = std::str::from_utf8(&req.value) {
            bodies.push(json!({ "value": text }));
        }
        for again in bodies {
            let again = Bytes::from(again.to_string());
            let req2 = parse::put_request(&key_path(&req.key), query, JSON, again)
                .expect("re-serialized put parses");
            assert_eq!(req2, req, "put does not round-trip through JSON");
        }
    } else {
        assert_eq!(req.value, body, "a raw body is not the value");
    }
    check_put(&req);
}

fn check_put(req: &PutRequest) {
    check_request_id(&req.request_id);
    for l in &limits() {
        if accepted(
            l.check_key(&req.key)
                .and_then(|()| l.check_value(&req.value)),
        )
        .is_some()
        {
            assert_key_fits(l, &req.key);
            assert_value_fits(l, &req.value);
        }
    }
}

fn read_query(stale: bool, encoding: Option<Encoding>) -> String {
    let mut pairs = Vec::new();
    if stale {
        pairs.push(("consistency", "stale"));
    }
    match encoding {
        Some(Encoding::Base64) => pairs.push(("encoding", "base64")),
        Some(Encoding::Utf8) => pairs.push(("encoding", "utf8")),
        None => {}
    }
    serde_urlencoded::to_string(pairs).expect("query serializes")
}

fn rest_get(path: &str, query: &str) {
    let Some((req, format)) = accepted(parse::get_request(path, query)) else {
        return;
    };
    assert_key_round_trips(&req.key);
    assert_eq!(
        format.stale,
        req.consistency == Consistency::Stale as i32,
        "stale flag disagrees with the request"
    );
    let again = parse::get_request(
        &key_path(&req.key),
        &read_query(format.stale, format.encoding),
    )
    .expect("re-serialized get parses");
    assert_eq!(again, (req.clone(), format), "get does not round-trip");
    check_get(&req);
}

fn check_get(req: &GetRequest) {
    for l in &limits() {
        if accepted(l.check_key(&req.key)).is_some() {
            assert_key_fits(l, &req.key);
        }
    }
    accepted(validate::consistency(req.consistency));
}

fn rest_delete(path: &str) {
    let Some(req) = accepted(parse::delete_request(path)) else {
        return;
    };
    assert_key_round_trips(&req.key);
    check_delete(&req);
}

fn check_delete(req: &DeleteRequest) {
    check_request_id(&req.request_id);
    for l in &limits() {
        if accepted(l.check_key(&req.key)).is_some() {
            assert_key_fits(l, &req.key);
        }
    }
}

/// The query string that asks for `req` (byte strings in base64).
fn scan_query(req: &ScanRequest, format: ReplyFormat) -> String {
    let mut pairs: Vec<(&str, String)> = vec![("encoding", "base64".into())];
    match &req.selector {
        Some(scan_request::Selector::Prefix(p)) => pairs.push(("prefix", STANDARD.encode(p))),
        Some(scan_request::Selector::Range(r)) => {
            pairs.push(("start", STANDARD.encode(&r.start)));
            pairs.push(("end", STANDARD.encode(&r.end)));
        }
        None => {}
    }
    if req.limit != 0 {
        pairs.push(("limit", req.limit.to_string()));
    }
    if !req.page_token.is_empty() {
        pairs.push(("page_token", URL_SAFE_NO_PAD.encode(&req.page_token)));
    }
    if format.stale {
        pairs.push(("consistency", "stale".into()));
    }
    if req.keys_only {
        pairs.push(("keys_only", "true".into()));
    }
    serde_urlencoded::to_string(pairs).expect("query serializes")
}

fn rest_scan(query: &str) {
    let Some((req, format)) = accepted(parse::scan_request(query)) else {
        return;
    };
    assert_eq!(
        format.stale,
        req.consistency == Consistency::Stale as i32,
        "stale flag disagrees with the request"
    );
    let (again, format2) =
        parse::scan_request(&scan_query(&req, format)).expect("re-serialized scan parses");
    assert_eq!(again, req, "scan does not round-trip through its query");
    assert_eq!(
        format2.stale, format.stale,
        "stale flag does not round-trip"
    );
    check_scan(&req);
}

fn check_scan(req: &ScanRequest) {
    for l in &limits() {
        let Some(b) = accepted(validate::scan_bounds(l, req)) else {
            continue;
        };
        if req.limit == 0 {
            assert_eq!(b.limit, l.default_scan_limit as usize, "default limit");
        } else {
            assert_eq!(b.limit, req.limit as usize, "limit changed");
            assert!(req.limit <= l.max_scan_limit, "limit above the maximum");
        }
        if let Some(end) = &b.end {
            assert!(b.start <= *end, "scan starts after its end");
        }
        if !req.page_token.is_empty() {
            assert_eq!(b.start, req.page_token, "page token is not the start");
        }
    }
    accepted(validate::consistency(req.consistency));
}

/// The query string that asks for `req` (byte strings in base64).
fn watch_query(req: &WatchRequest) -> String {
    let mut pairs: Vec<(&str, String)> = vec![("encoding", "base64".into())];
    match &req.selector {
        Some(watch_request::Selector::Key(k)) => pairs.push(("key", STANDARD.encode(k))),
        Some(watch_request::Selector::Prefix(p)) => pairs.push(("prefix", STANDARD.encode(p))),
        Some(watch_request::Selector::Range(r)) => {
            pairs.push(("start", STANDARD.encode(&r.start)));
            pairs.push(("end", STANDARD.encode(&r.end)));
        }
        None => {}
    }
    if req.from_index != 0 {
        pairs.push(("from_index", req.from_index.to_string()));
    }
    if req.progress_interval_ms != 0 {
        pairs.push(("progress_ms", req.progress_interval_ms.to_string()));
    }
    serde_urlencoded::to_string(pairs).expect("query serializes")
}

/// A watch's query, with `body` (when not empty) as its `Last-Event-ID`:
/// it parses or is refused as the client's error, round-trips through its
/// query, and what the watch service accepts covers a range whose start is
/// not after its end, from the index the request named.
fn rest_watch(query: &str, body: &[u8]) {
    let last_event_id = (!body.is_empty()).then(|| String::from_utf8_lossy(body).into_owned());
    let Some((req, _)) = accepted(parse::watch_request(query, last_event_id.as_deref())) else {
        return;
    };
    let (again, _) =
        parse::watch_request(&watch_query(&req), None).expect("re-serialized watch parses");
    assert_eq!(again, req, "watch does not round-trip through its query");
    if let Some(spec) = accepted(strata_server::watch::WatchSpec::from_request(&req)) {
        if let Some(end) = &spec.end {
            assert!(spec.start <= *end, "watch starts after its end");
        }
        assert_eq!(
            spec.from_index.unwrap_or(0),
            req.from_index,
            "start index changed"
        );
    }
}

fn batch_json(req: &BatchRequest) -> Vec<u8> {
    let ops: Vec<serde_json::Value> = req
        .ops
        .iter()
        .map(|op| match &op.op {
            Some(batch_op::Op::Put(p)) => json!({
                "op": "put", "key": STANDARD.encode(&p.key), "value": STANDARD.encode(&p.value)
            }),
            Some(batch_op::Op::Delete(d)) => {
                json!({ "op": "delete", "key": STANDARD.encode(&d.key) })
            }
            None => panic!("a parsed REST batch has an empty operation"),
        })
        .collect();
    json!({ "ops": ops, "encoding": "base64" })
        .to_string()
        .into_bytes()
}

fn rest_batch(content_type: Option<&str>, body: &[u8]) {
    let Some(req) = accepted(parse::batch_request(content_type, body)) else {
        return;
    };
    let again = parse::batch_request(JSON, &batch_json(&req)).expect("re-serialized batch parses");
    assert_eq!(again, req, "batch does not round-trip through JSON");
    check_batch(&req);
}

fn check_batch(req: &BatchRequest) {
    check_request_id(&req.request_id);
    for l in &limits() {
        let Some(ops) = accepted(validate::batch_ops(l, req)) else {
            continue;
        };
        assert!(!ops.is_empty(), "empty batch validated");
        assert!(ops.len() <= l.max_batch_ops, "batch over max ops validated");
        assert_eq!(ops.len(), req.ops.len(), "operations lost or added");
        for (op, asked) in ops.iter().zip(&req.ops) {
            match (op, &asked.op) {
                (Op::Put { key, value }, Some(batch_op::Op::Put(p))) => {
                    assert_key_fits(l, key);
                    assert_value_fits(l, value);
                    assert_eq!((&key[..], &value[..]), (&p.key[..], &p.value[..]));
                }
                (Op::Delete { key }, Some(batch_op::Op::Delete(d))) => {
                    assert_key_fits(l, key);
                    assert_eq!(&key[..], &d.key[..]);
                }
                (op, asked) => panic!("operation {op:?} does not match {asked:?}"),
            }
        }
    }
}

fn cas_json(req: &CompareAndSwapRequest) -> Vec<u8> {
    let mut j = json!({ "key": STANDARD.encode(&req.key), "encoding": "base64" });
    if let Some(e) = &req.expected {
        j["expected"] = STANDARD.encode(e).into();
    }
    if let Some(v) = &req.value {
        j["value"] = STANDARD.encode(v).into();
    }
    j.to_string().into_bytes()
}

fn rest_cas(content_type: Option<&str>, body: &[u8]) {
    let Some((req, _)) = accepted(parse::cas_request(content_type, body)) else {
        return;
    };
    let (again, encoding) =
        parse::cas_request(JSON, &cas_json(&req)).expect("re-serialized cas parses");
    assert_eq!(again, req, "cas does not round-trip through JSON");
    assert_eq!(encoding, Encoding::Base64);
    check_cas(&req);
}

fn check_cas(req: &CompareAndSwapRequest) {
    check_request_id(&req.request_id);
    for l in &limits() {
        if accepted(validate::check_cas(l, req)).is_some() {
            assert_key_fits(l, &req.key);
            for v in [&req.expected, &req.value].into_iter().flatten() {
                assert_value_fits(l, v);
            }
        }
    }
}

/// Decodes `data` as `T`; what decodes re-encodes and decodes back to an
/// equal message.
fn decode_round_trip<T: prost::Message + Default + PartialEq + std::fmt::Debug>(
    data: &[u8],
) -> Option<T> {
    let m = T::decode(data).ok()?;
    let again = T::decode(m.encode_to_vec().as_slice()).expect("re-encoded message decodes");
    assert_eq!(again, m, "message does not round-trip");
    Some(m)
}

/// gRPC request decoding, then validation: the input is decoded as each KV
/// request type (prost, as tonic does). What decodes re-encodes and decodes
/// to an equal message; the checks the service core runs on it never panic,
/// refuse only with 4xx errors (INVALID_ARGUMENT on gRPC), and what passes
/// them is within the limits.
pub fn grpc_request(data: &[u8]) {
    decode_round_trip::<PutRequest>(data).inspect(check_put);
    decode_round_trip::<GetRequest>(data).inspect(check_get);
    decode_round_trip::<DeleteRequest>(data).inspect(check_delete);
    decode_round_trip::<ScanRequest>(data).inspect(check_scan);
    decode_round_trip::<BatchRequest>(data).inspect(check_batch);
    decode_round_trip::<CompareAndSwapRequest>(data).inspect(check_cas);
    decode_round_trip::<WatchRequest>(data).inspect(check_watch);
    decode_round_trip::<TxnRequest>(data).inspect(check_txn);
    decode_round_trip::<LeaseGrantRequest>(data).inspect(check_lease_grant);
}

/// A lease grant validates only with a TTL from 1 s to a year and an id a
/// JSON number carries exactly.
fn check_lease_grant(req: &LeaseGrantRequest) {
    check_request_id(&req.request_id);
    if let Some(ttl) = accepted(validate::lease_ttl(req.ttl_ms)) {
        assert!(
            (validate::MIN_LEASE_TTL_MS..=validate::MAX_LEASE_TTL_MS).contains(&ttl),
            "a TTL out of range validated"
        );
    }
    if let Some(id) = accepted(validate::lease_id(req.id)) {
        assert!(
            id <= strata_raft::MAX_LEASE_ID,
            "a lease id over the largest validated"
        );
    }
}

fn rest_txn(content_type: Option<&str>, body: &[u8]) {
    if let Some((req, _)) = accepted(parse::txn_request(content_type, body)) {
        check_txn(&req);
    }
}

/// A validated transaction has every part within the limits, and as many
/// compares and operations in each branch as the request.
fn check_txn(req: &TxnRequest) {
    check_request_id(&req.request_id);
    for l in &limits() {
        let Some(txn) = accepted(validate::txn(l, req)) else {
            continue;
        };
        assert_eq!(txn.compares.len(), req.compare.len(), "compares lost");
        assert_eq!(txn.success.len(), req.success.len(), "success ops lost");
        assert_eq!(txn.failure.len(), req.failure.len(), "failure ops lost");
        for part in [txn.compares.len(), txn.success.len(), txn.failure.len()] {
            assert!(part <= l.max_batch_ops, "a part over the limit validated");
        }
        for branch in [&txn.success, &txn.failure] {
            let reads = branch
                .iter()
                .filter(|op| {
                    matches!(
                        op,
                        strata_raft::TxnOp::Get { .. } | strata_raft::TxnOp::Range { .. }
                    )
                })
                .count();
            assert!(
                reads <= strata_raft::MAX_TXN_READS,
                "a branch over the read limit validated"
            );
        }
        for c in &txn.compares {
            assert_key_fits(l, &c.key);
            if let strata_raft::CompareTarget::Value(_, v) = &c.target {
                assert_value_fits(l, v);
            }
        }
        for op in txn.success.iter().chain(&txn.failure) {
            match op {
                strata_raft::TxnOp::Put { key, value, .. } => {
                    assert_key_fits(l, key);
                    assert_value_fits(l, value);
                }
                strata_raft::TxnOp::Delete { key } | strata_raft::TxnOp::Get { key } => {
                    assert_key_fits(l, key)
                }
                strata_raft::TxnOp::Range { start, end, limit } => {
                    assert!(
                        end.is_empty() || start <= end,
                        "a range starts after its end"
                    );
                    assert!(
                        *limit <= strata_raft::MAX_RANGE_KEYS,
                        "range limit over the most"
                    );
                }
            }
        }
        // What validates encodes into a raft entry that decodes to it.
        let p = strata_raft::Proposal {
            request_id: 1,
            command: strata_raft::Command::Txn(txn),
            dedupe: None,
        };
        assert_eq!(
            strata_raft::Proposal::decode(&p.encode()).expect("a validated txn decodes"),
            p
        );
    }
}

/// A write's request id is accepted only when short printable ASCII, which
/// is what an HTTP header can carry; anything else is the client's error.
fn check_request_id(id: &str) {
    if let Some(Some(id)) = accepted(validate::request_id(id)) {
        assert!(
            id.len() <= validate::MAX_REQUEST_ID_BYTES,
            "request id over the limit"
        );
        assert!(
            id.bytes().all(|b| b.is_ascii_graphic()),
            "request id a header cannot carry"
        );
    }
}

fn check_watch(req: &WatchRequest) {
    if let Some(spec) = accepted(strata_server::watch::WatchSpec::from_request(req)) {
        if let Some(end) = &spec.end {
            assert!(spec.start <= *end, "watch starts after its end");
        }
        assert!(
            spec.progress >= std::time::Duration::from_millis(100),
            "progress interval under the minimum"
        );
    }
}

/// The raft transport's batch check (`strata.v1.Raft/Send`): the input is
/// decoded as a `RaftBatch` and checked as node 2, and as the node it names
/// (so the per-message checks are reached). It never panics; a refusal is
/// INVALID_ARGUMENT; an accepted batch names this node, and every message
/// decoded is addressed to this node.
pub fn raft_batch(data: &[u8]) {
    let Some(batch) = decode_round_trip::<RaftBatch>(data) else {
        return;
    };
    for id in [2, batch.to_node] {
        match validate_batch(id, &batch) {
            Ok(messages) => {
                assert_eq!(batch.to_node, id);
                assert_eq!(messages.len(), batch.messages.len(), "messages lost");
                assert!(
                    messages.iter().all(|m| m.to == id),
                    "message for another node"
                );
            }
            Err(s) => assert!(s.code() == Code::InvalidArgument, "unexpected status {s:?}"),
        }
    }
}
