//! The seeds mutations start from are valid inputs: the raft proposal seeds
//! are canonical encodings, and the server's seed corpus
//! (`corpus/<target>/seed-*`) is valid requests of every kind, generated
//! here, so that mutations start from deep inside the parsers.

use bytes::Bytes;
use prost::Message as _;
use strata_fuzz::Target;
use strata_fuzz::server::{Route, rest_input};
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, Consistency, DeleteOp, DeleteRequest, GetRequest,
    KeyRange, LeaseGrantRequest, PutOp, PutRequest, RaftBatch, ScanRequest, TxnRequest, batch_op,
    scan_request,
};
use strata_raft::command::Proposal;
use strata_raft::{Message, MessageType};
use strata_server::config::Limits;
use strata_server::rest::parse;
use strata_server::validate;

#[test]
fn proposal_seeds_decode_and_re_encode_exactly() {
    // Proves the proposal seeds are canonical encodings, so mutations start
    // from inputs the decoder accepts; half of them carry a trace context.
    let seeds = strata_fuzz::raft_seeds::proposal_seeds();
    let traced = seeds
        .iter()
        .filter(|s| Proposal::trace_of(s).is_some())
        .count();
    assert_eq!(
        traced * 2,
        seeds.len(),
        "as many traced seeds as plain ones"
    );
    for s in seeds {
        let p = Proposal::decode(&s).expect("seed decodes");
        assert_eq!(p.encode_traced(Proposal::trace_of(&s).as_ref()), s);
    }
}

fn corpus_dir(target: &str) -> std::path::PathBuf {
    Target::named(target)
        .expect("a registered target")
        .corpus_dir()
}

/// A seed: its target, its file name, its bytes.
struct Seed {
    target: &'static str,
    name: &'static str,
    bytes: Vec<u8>,
}

fn rest(name: &'static str, route: Route, flags: u8, head: &str, body: &str) -> Seed {
    Seed {
        target: "rest_request",
        name,
        bytes: rest_input(route, flags, head, body.as_bytes()),
    }
}

fn grpc(name: &'static str, m: impl prost::Message) -> Seed {
    Seed {
        target: "grpc_request",
        name,
        bytes: m.encode_to_vec(),
    }
}

fn raft_message(kind: MessageType, to: u64) -> Bytes {
    let mut m = Message::default();
    m.set_msg_type(kind);
    m.from = 1;
    m.to = to;
    m.term = 7;
    m.index = 41;
    m.log_term = 6;
    m.commit = 40;
    Bytes::from(strata_raft::encode_message(&m))
}

fn bytes(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Valid requests of every kind; `corpus/` holds exactly these as
/// `seed-<name>` files (see `write_seed_corpus`).
/// `mod_index(a) = 3`.
fn mod_index_compare() -> strata_proto::v1::Compare {
    strata_proto::v1::Compare {
        key: bytes("a"),
        op: strata_proto::v1::CompareOp::Equal as i32,
        target: Some(strata_proto::v1::compare::Target::ModIndex(3)),
    }
}

fn seeds() -> Vec<Seed> {
    const TEXT: u8 = 4;
    const JSON: u8 = 1;
    const JSON_UTF8: u8 = 2;
    let put = |key: &str, value: &str| BatchOp {
        op: Some(batch_op::Op::Put(PutOp {
            key: bytes(key),
            value: bytes(value),
            lease: 0,
        })),
    };
    vec![
        rest("put-raw", Route::Put, TEXT, "greeting", "hello"),
        rest("put-ttl", Route::Put, TEXT, "session?ttl=30s", "s"),
        rest(
            "lease-grant",
            Route::LeaseGrant,
            JSON,
            "",
            r#"{"ttl":"30s","id":7}"#,
        ),
        rest(
            "txn",
            Route::Txn,
            JSON,
            "",
            r#"{"compare":[{"key":"a","mod_index":3},{"key":"b","op":"greater","value":"5"},{"key":"c","exists":false}],"success":[{"op":"put","key":"a","value":"1"},{"op":"delete","key":"b"},{"op":"range","start":"a","end":"b","limit":2}],"failure":[{"op":"get","key":"a"}]}"#,
        ),
        rest(
            "put-json-base64",
            Route::Put,
            JSON,
            "dir%2Fkey",
            r#"{"value":"aGk=","encoding":"base64"}"#,
        ),
        rest(
            "put-json-utf8",
            Route::Put,
            JSON_UTF8,
            "k",
            r#"{"value":"v"}"#,
        ),
        rest(
            "get-stale-base64",
            Route::Get,
            0,
            "a%FFb?consistency=stale&encoding=base64",
            "",
        ),
        rest("get", Route::Get, 0, "dir/key", ""),
        rest("delete", Route::Delete, 0, "a%2Fb", ""),
        rest(
            "scan-prefix",
            Route::Scan,
            0,
            "prefix=dir%2F&limit=3&keys_only=true",
            "",
        ),
        rest(
            "scan-range",
            Route::Scan,
            0,
            "start=YQ%3D%3D&end=eg%3D%3D&encoding=base64&consistency=stale",
            "",
        ),
        rest(
            "scan-page",
            Route::Scan,
            0,
            "prefix=dir%2F&page_token=ZGlyL2EA&limit=2",
            "",
        ),
        rest(
            "watch-prefix",
            Route::Watch,
            0,
            "prefix=dir%2F&from_index=7&progress_ms=500",
            "",
        ),
        rest(
            "watch-resume",
            Route::Watch,
            0,
            "start=YQ%3D%3D&end=eg%3D%3D&encoding=base64",
            "41",
        ),
        rest(
            "batch",
            Route::Batch,
            JSON,
            "",
            r#"{"ops":[{"op":"put","key":"a","value":"1"},{"op":"delete","key":"b"}]}"#,
        ),
        rest(
            "batch-base64",
            Route::Batch,
            JSON_UTF8,
            "",
            r#"{"ops":[{"op":"put","key":"/w==","value":""}],"encoding":"base64"}"#,
        ),
        rest(
            "cas",
            Route::Cas,
            JSON,
            "",
            r#"{"key":"k","expected":"old","value":"new"}"#,
        ),
        rest(
            "cas-create-base64",
            Route::Cas,
            JSON,
            "",
            r#"{"key":"aw==","value":"","encoding":"base64"}"#,
        ),
        grpc(
            "put",
            PutRequest {
                key: bytes("greeting"),
                value: bytes("hello"),
                request_id: "put-1".into(),
                ..PutRequest::default()
            },
        ),
        grpc(
            "get",
            GetRequest {
                key: bytes("greeting"),
                consistency: Consistency::Stale as i32,
            },
        ),
        grpc(
            "delete",
            DeleteRequest {
                key: bytes("old"),
                request_id: String::new(),
            },
        ),
        grpc(
            "scan-prefix",
            ScanRequest {
                selector: Some(scan_request::Selector::Prefix(bytes("dir/"))),
                limit: 3,
                page_token: bytes("dir/a\0"),
                consistency: Consistency::Linearizable as i32,
                keys_only: true,
            },
        ),
        grpc(
            "scan-range",
            ScanRequest {
                selector: Some(scan_request::Selector::Range(KeyRange {
                    start: bytes("a"),
                    end: bytes("m"),
                })),
                limit: 10,
                ..ScanRequest::default()
            },
        ),
        grpc(
            "batch",
            BatchRequest {
                ops: vec![
                    put("a", "1"),
                    BatchOp {
                        op: Some(batch_op::Op::Delete(DeleteOp { key: bytes("b") })),
                    },
                ],
                request_id: String::new(),
            },
        ),
        grpc(
            "cas",
            CompareAndSwapRequest {
                key: bytes("k"),
                expected: Some(bytes("old")),
                value: None,
                request_id: "cas-1".into(),
            },
        ),
        grpc(
            "lease-grant",
            LeaseGrantRequest {
                ttl_ms: 30_000,
                id: 7,
                request_id: "lease-1".into(),
            },
        ),
        grpc(
            "txn",
            TxnRequest {
                compare: vec![mod_index_compare()],
                success: vec![strata_proto::v1::TxnOp {
                    op: Some(strata_proto::v1::txn_op::Op::Put(PutOp {
                        key: bytes("a"),
                        value: bytes("1"),
                        lease: 0,
                    })),
                }],
                failure: vec![strata_proto::v1::TxnOp {
                    op: Some(strata_proto::v1::txn_op::Op::Get(strata_proto::v1::GetOp {
                        key: bytes("a"),
                    })),
                }],
                request_id: "txn-1".into(),
            },
        ),
        Seed {
            target: "raft_batch",
            name: "append-and-heartbeat",
            bytes: RaftBatch {
                group_id: 1,
                from_node: 1,
                to_node: 2,
                messages: vec![
                    raft_message(MessageType::MsgAppend, 2),
                    raft_message(MessageType::MsgHeartbeat, 2),
                ],
                from_incarnation: 0x5eed,
                from_proven: true,
                to_incarnation: 0xfeed,
                vouched: true,
                cluster_id: 0,
            }
            .encode_to_vec(),
        },
        Seed {
            target: "raft_batch",
            name: "vote",
            bytes: RaftBatch {
                group_id: 1,
                from_node: 1,
                to_node: 2,
                messages: vec![raft_message(MessageType::MsgRequestVote, 2)],
                ..RaftBatch::default()
            }
            .encode_to_vec(),
        },
    ]
}

/// Whether a seed is a request the node accepts, by its name and target.
fn accepted(seed: &Seed) -> bool {
    let limits = Limits::default();
    let b = &seed.bytes;
    match seed.target {
        "rest_request" => {
            let text = std::str::from_utf8(&b[2..]).expect("REST seeds are text");
            let (head, body) = text.split_once('\n').expect("head and body");
            let (path, query) = head.split_once('?').unwrap_or((head, ""));
            let path = format!("{}{path}", parse::KV_PREFIX);
            let content_type = strata_fuzz::server::CONTENT_TYPES[usize::from(b[1] & 7)];
            match strata_fuzz::server::ROUTES[usize::from(b[0])] {
                Route::Put => parse::put_request(&path, query, content_type, bytes(body))
                    .and_then(|r| limits.check_key(&r.key).and(limits.check_value(&r.value)))
                    .is_ok(),
                Route::Get => parse::get_request(&path, query)
                    .and_then(|(r, _)| limits.check_key(&r.key))
                    .is_ok(),
                Route::Delete => parse::delete_request(&path).is_ok(),
                Route::Scan => parse::scan_request(head)
                    .and_then(|(r, _)| validate::scan_bounds(&limits, &r))
                    .is_ok(),
                Route::Batch => parse::batch_request(content_type, body.as_bytes())
                    .and_then(|r| validate::batch_ops(&limits, &r))
                    .is_ok(),
                Route::Cas => parse::cas_request(content_type, body.as_bytes())
                    .and_then(|(r, _)| validate::check_cas(&limits, &r))
                    .is_ok(),
                Route::Watch => parse::watch_request(head, (!body.is_empty()).then_some(body))
                    .and_then(|(r, _)| strata_server::watch::WatchSpec::from_request(&r))
                    .is_ok(),
                Route::Txn => parse::txn_request(content_type, body.as_bytes())
                    .and_then(|(r, _)| validate::txn(&limits, &r))
                    .is_ok(),
                Route::LeaseGrant => parse::lease_grant_request(content_type, body.as_bytes())
                    .and_then(|r| validate::lease_ttl(r.ttl_ms).and(validate::lease_id(r.id)))
                    .is_ok(),
            }
        }
        "grpc_request" => match seed.name.split('-').next() {
            Some("put") => PutRequest::decode(&b[..])
                .map(|r| validate::request_id(&r.request_id).is_ok())
                .unwrap_or(false),
            Some("get") => GetRequest::decode(&b[..]).is_ok(),
            Some("delete") => DeleteRequest::decode(&b[..]).is_ok(),
            Some("scan") => ScanRequest::decode(&b[..])
                .map(|r| validate::scan_bounds(&limits, &r).is_ok())
                .unwrap_or(false),
            Some("batch") => BatchRequest::decode(&b[..])
                .map(|r| validate::batch_ops(&limits, &r).is_ok())
                .unwrap_or(false),
            Some("lease") => LeaseGrantRequest::decode(&b[..])
                .map(|r| {
                    validate::lease_ttl(r.ttl_ms).is_ok()
                        && validate::lease_id(r.id).is_ok()
                        && validate::request_id(&r.request_id).is_ok()
                })
                .unwrap_or(false),
            Some("txn") => TxnRequest::decode(&b[..])
                .map(|r| {
                    validate::txn(&limits, &r).is_ok()
                        && validate::request_id(&r.request_id).is_ok()
                })
                .unwrap_or(false),
            Some("cas") => CompareAndSwapRequest::decode(&b[..])
                .map(|r| {
                    validate::check_cas(&limits, &r).is_ok()
                        && validate::request_id(&r.request_id).is_ok()
                })
                .unwrap_or(false),
            _ => false,
        },
        "raft_batch" => RaftBatch::decode(&b[..])
            .map(|batch| strata_server::grpc::raft::validate_batch(2, &batch).is_ok())
            .unwrap_or(false),
        _ => false,
    }
}

#[test]
fn seed_corpus_is_valid_requests_and_matches_its_generator() {
    // Proves: every seed is a request the node accepts (so mutations start
    // from deep inside the parsers), and the files in corpus/ are exactly
    // what `seeds()` generates.
    for seed in seeds() {
        assert!(accepted(&seed), "{}/{} is refused", seed.target, seed.name);
        let path = corpus_dir(seed.target).join(format!("seed-{}", seed.name));
        let on_disk = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run write_seed_corpus", path.display()));
        assert_eq!(on_disk, seed.bytes, "{} is stale", path.display());
    }
}

/// Regenerates `corpus/<target>/seed-*`:
/// `cargo test -p strata-fuzz --test fuzz_seeds -- --ignored write_seed_corpus`.
#[test]
#[ignore = "writes the seed corpus"]
fn write_seed_corpus() {
    for seed in seeds() {
        let dir = corpus_dir(seed.target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        std::fs::write(dir.join(format!("seed-{}", seed.name)), &seed.bytes).expect("seed file");
    }
}
