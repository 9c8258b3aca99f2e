//! A short, bounded, seeded run of every fuzz target body on stable Rust:
//! random bytes and mutations of the seed corpus in `corpus/<target>/`. It
//! proves the request parsers and checks neither panic, nor answer bad input
//! with a 5xx, nor break a round trip on these inputs; the real fuzzing runs
//! with cargo-fuzz on nightly. Set STRATA_FUZZ_SEED, STRATA_FUZZ_ITERS and
//! STRATA_FUZZ_SECS to replay or lengthen; a failure prints the seed,
//! iteration and input.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message as _;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, Consistency, DeleteOp, DeleteRequest, GetRequest,
    KeyRange, PutOp, PutRequest, RaftBatch, ScanRequest, batch_op, scan_request,
};
use strata_raft::{Message, MessageType};
use strata_server::config::Limits;
use strata_server::rest::parse;
use strata_server::validate;
use strata_server_fuzz::{Route, rest_input};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Mutates a valid input: bit flips, truncation, insertion (bytes and
/// characters that matter to the parsers), byte overwrite, a rewritten
/// protobuf length or varint, a spliced-in tail.
fn mutate(rng: &mut SmallRng, seed: &[u8]) -> Vec<u8> {
    const INTERESTING: &[u8] = b"%?&=\n\"{}[],:\\/+ \0\xff\x80";
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..7) {
            0 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => v.truncate(rng.random_range(0..v.len())),
            2 => {
                let i = rng.random_range(0..=v.len());
                let b = if rng.random_bool(0.5) {
                    INTERESTING[rng.random_range(0..INTERESTING.len())]
                } else {
                    rng.random()
                };
                v.insert(i, b);
            }
            3 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = rng.random();
            }
            4 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = [0, 1, 0x7f, 0x80, 0xff][rng.random_range(0..5)];
            }
            5 if !v.is_empty() => {
                let from = rng.random_range(0..v.len());
                let tail = v[from..].to_vec();
                let at = rng.random_range(0..=v.len());
                v.splice(at..at, tail);
            }
            _ => v.extend((0..rng.random_range(0..8)).map(|_| rng.random::<u8>())),
        }
    }
    v
}

fn random_bytes(rng: &mut SmallRng) -> Vec<u8> {
    let n = rng.random_range(0..200);
    (0..n).map(|_| rng.random()).collect()
}

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

/// The committed inputs of a target: seeds and regression inputs (not what a
/// local cargo-fuzz run added, so the smoke is the same on every machine).
fn committed_corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir(target))
        .expect("corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            (name.starts_with("seed-") || name.starts_with("regress-"))
                .then(|| (name, std::fs::read(&p).expect("corpus file")))
        })
        .collect();
    files.sort();
    files
}

/// Runs `body` on `input`; a panic fails the test naming what was run.
fn check(target: &str, what: &str, input: &[u8], body: fn(&[u8])) {
    if let Err(e) = catch_unwind(AssertUnwindSafe(|| body(input))) {
        panic!(
            "{target}: {what} input {:02x?} ({:?}): {:?}",
            input,
            String::from_utf8_lossy(input),
            e.downcast_ref::<String>()
                .map(String::as_str)
                .or(e.downcast_ref::<&str>().copied())
        );
    }
}

fn run(target: &str, body: fn(&[u8])) {
    let corpus = committed_corpus(target);
    assert!(!corpus.is_empty(), "{target}: no seed corpus");
    let seed = env_u64("STRATA_FUZZ_SEED", 0x5eed);
    let iters = env_u64("STRATA_FUZZ_ITERS", 300_000);
    let budget = Duration::from_secs(env_u64("STRATA_FUZZ_SECS", 3));
    let mut rng = SmallRng::seed_from_u64(seed);
    let start = Instant::now();
    for (name, input) in &corpus {
        check(target, &format!("corpus file {name}"), input, body);
    }
    let mut done = 0;
    for i in 0..iters {
        if start.elapsed() > budget {
            break;
        }
        let input = if i % 4 == 0 {
            random_bytes(&mut rng)
        } else {
            let pick = rng.random_range(0..corpus.len());
            mutate(&mut rng, &corpus[pick].1)
        };
        check(target, &format!("seed {seed} iteration {i}"), &input, body);
        done += 1;
    }
    eprintln!(
        "{target}: {done} inputs, seed {seed}, {:?}",
        start.elapsed()
    );
}

#[test]
fn rest_request_smoke() {
    run("rest_request", strata_server_fuzz::rest_request);
}

#[test]
fn grpc_request_smoke() {
    run("grpc_request", strata_server_fuzz::grpc_request);
}

#[test]
fn raft_batch_smoke() {
    run("raft_batch", strata_server_fuzz::raft_batch);
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
fn seeds() -> Vec<Seed> {
    const TEXT: u8 = 4;
    const JSON: u8 = 1;
    const JSON_UTF8: u8 = 2;
    let put = |key: &str, value: &str| BatchOp {
        op: Some(batch_op::Op::Put(PutOp {
            key: bytes(key),
            value: bytes(value),
        })),
    };
    vec![
        rest("put-raw", Route::Put, TEXT, "greeting", "hello"),
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
            },
        ),
        grpc(
            "get",
            GetRequest {
                key: bytes("greeting"),
                consistency: Consistency::Stale as i32,
            },
        ),
        grpc("delete", DeleteRequest { key: bytes("old") }),
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
            },
        ),
        grpc(
            "cas",
            CompareAndSwapRequest {
                key: bytes("k"),
                expected: Some(bytes("old")),
                value: None,
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
            }
            .encode_to_vec(),
        },
        Seed {
            target: "raft_batch",
            name: "vote",
            bytes: RaftBatch {
                group_id: 1,
                from_node: 3,
                to_node: 2,
                messages: vec![raft_message(MessageType::MsgRequestVote, 2)],
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
            let content_type = strata_server_fuzz::CONTENT_TYPES[usize::from(b[1] & 7)];
            match strata_server_fuzz::ROUTES[usize::from(b[0])] {
                Route::Put => parse::put_request(&path, content_type, bytes(body))
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
            }
        }
        "grpc_request" => match seed.name.split('-').next() {
            Some("put") => PutRequest::decode(&b[..]).is_ok(),
            Some("get") => GetRequest::decode(&b[..]).is_ok(),
            Some("delete") => DeleteRequest::decode(&b[..]).is_ok(),
            Some("scan") => ScanRequest::decode(&b[..])
                .map(|r| validate::scan_bounds(&limits, &r).is_ok())
                .unwrap_or(false),
            Some("batch") => BatchRequest::decode(&b[..])
                .map(|r| validate::batch_ops(&limits, &r).is_ok())
                .unwrap_or(false),
            Some("cas") => CompareAndSwapRequest::decode(&b[..])
                .map(|r| validate::check_cas(&limits, &r).is_ok())
                .unwrap_or(false),
            _ => false,
        },
        "raft_batch" => RaftBatch::decode(&b[..])
            .map(|batch| strata_server::grpc::raft::validate_batch(2, 1, &batch).is_ok())
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
/// `cargo test --no-default-features --test smoke -- --ignored write_seed_corpus`.
#[test]
#[ignore = "writes the seed corpus"]
fn write_seed_corpus() {
    for seed in seeds() {
        let dir = corpus_dir(seed.target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        std::fs::write(dir.join(format!("seed-{}", seed.name)), &seed.bytes).expect("seed file");
    }
}
