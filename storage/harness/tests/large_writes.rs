//! Large writes under sustained load, seen from outside: a real 3-node
//! cluster behind real Envoy, many clients sending batches as large as the
//! gateway and the node accept, over REST and gRPC at once, for a bounded
//! time. The cluster must push back with "not applied, retry" (REST 503,
//! gRPC RESOURCE_EXHAUSTED or UNAVAILABLE, marked `x-strata-retryable`)
//! rather than lose its leader, answer "outcome unknown" or grow without
//! bound; every acknowledged batch must be readable afterwards, and every
//! refused one absent.
//!
//! Not in `./dev test` (docs/reliability.md, "The last elections, unknown
//! outcomes and memory of large writes"): it needs release nodes and both
//! cores for a minute, and the suite's nodes are debug builds. It passed
//! three runs of four there; the fourth met an election as the load began.
//! Run it with
//! `./dev test-large-writes`, or by hand:
//! `cargo build --release --bin strata-node` then
//! `STRATA_NODE_BIN=$PWD/target/release/strata-node cargo test -p strata-harness --test large_writes -- --ignored --nocapture`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use strata_client::{Client, ClientError};
use strata_harness::Cluster;
use tonic::Code;

/// Clients on each front end; 24 in all, the load that answered 14 of 24
/// batches "outcome unknown" on a release build before back-pressure.
const CLIENTS_PER_FRONT: usize = 12;
/// Operations per batch and bytes per value: 16 × 960 KiB = 15 MiB of
/// values, which with the JSON or protobuf framing stays under both the
/// gateway's 16 MiB request buffer (`REQUEST_BUFFER_BYTES` in
/// `gateway/gen_envoy.py`) and the node's 16 MiB request limit
/// (`max_request_bytes`). A value is under the node's 1 MiB limit.
const OPS_PER_BATCH: usize = 16;
const VALUE_BYTES: usize = 960 * 1024;
/// How long the clients write. A minute, as the finding asks: shorter runs
/// did not always reach the state (a few hundred MiB behind on a follower)
/// in which the leader lost its quorum.
const RUN_FOR: Duration = Duration::from_secs(60);
/// The resident memory no node may pass at any sample: the writes admitted
/// (32 MiB), the raft log's entries not yet compacted and the engine's
/// memtables, with room to spare; without admission the nodes of a release
/// build reached 0.8 to 1.04 GiB.
const RSS_BOUND_BYTES: u64 = 768 << 20;
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// What a client was told about one batch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    /// Applied: every key must be readable with its value.
    Applied,
    /// Certainly not applied: every key must be absent.
    Refused,
    /// Anything else, named by status and code (a failure of the test).
    Other(String),
}

/// How a client waits after a refusal, as the API asks of one ("safe to
/// retry after a pause"): from the 50 ms a refusal suggests (`retry-after-ms`),
/// doubling while refusals last, up to a second, spread a little by client;
/// back to none after a batch is applied.
struct Pause {
    next: Duration,
    spread: Duration,
}

impl Pause {
    const FIRST: Duration = Duration::from_millis(50);
    const MOST: Duration = Duration::from_secs(1);

    fn new(client: usize) -> Self {
        Pause {
            next: Duration::ZERO,
            spread: Duration::from_millis(7 * client as u64 % 50),
        }
    }

    async fn after(&mut self, answer: &Answer) {
        if *answer != Answer::Refused {
            self.next = Duration::ZERO;
            return;
        }
        self.next = (self.next * 2).clamp(Self::FIRST, Self::MOST);
        tokio::time::sleep(self.next + self.spread).await;
    }
}

/// One batch a client sent: its keys follow from `front`, `client` and `seq`.
struct Sent {
    front: &'static str,
    client: usize,
    seq: usize,
    answer: Answer,
}

fn batch_keys(front: &str, client: usize, seq: usize) -> Vec<String> {
    (0..OPS_PER_BATCH)
        .map(|op| format!("large-{front}-{client}-{seq}-{op}"))
        .collect()
}

/// The value written under `key`: the key repeated to `VALUE_BYTES`, so a
/// value read under the wrong key, or cut short, does not compare equal.
/// Built with whole copies of the key: the clients run beside the cluster
/// on the same cores and must not starve it.
fn value_of(key: &str) -> Vec<u8> {
    let mut value = Vec::with_capacity(VALUE_BYTES + key.len());
    while value.len() < VALUE_BYTES {
        value.extend_from_slice(key.as_bytes());
    }
    value.truncate(VALUE_BYTES);
    value
}

/// The REST batch body putting each key's value: JSON written directly
/// (keys and values are plain ASCII, nothing to escape), since building
/// and serializing a 15 MiB JSON tree takes a core for seconds in a debug
/// build.
fn rest_batch_body(keys: &[String]) -> Vec<u8> {
    let mut body = Vec::with_capacity(keys.len() * (VALUE_BYTES + 64));
    body.extend_from_slice(b"{\"ops\":[");
    for (i, key) in keys.iter().enumerate() {
        assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(b"{\"op\":\"put\",\"key\":\"");
        body.extend_from_slice(key.as_bytes());
        body.extend_from_slice(b"\",\"value\":\"");
        body.extend_from_slice(&value_of(key));
        body.extend_from_slice(b"\"}");
    }
    body.extend_from_slice(b"]}");
    body
}

async fn rest_client(c: &Cluster, client: usize, until: Instant) -> Vec<Sent> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let url = format!("{}/v1/batch", c.gateway_url());
    let mut pause = Pause::new(client);
    let mut sent = Vec::new();
    for seq in 0.. {
        if Instant::now() >= until {
            break;
        }
        let body = rest_batch_body(&batch_keys("rest", client, seq));
        let answer = match http
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
        {
            Err(e) if e.is_timeout() => Answer::Other("REST no answer within 30 s".into()),
            Err(e) => Answer::Other(format!(
                "REST transport error: {}",
                std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string())
            )),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let retryable = resp
                    .headers()
                    .get("x-strata-retryable")
                    .is_some_and(|v| v == "true");
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                match status {
                    200 => Answer::Applied,
                    503 if retryable => Answer::Refused,
                    _ => Answer::Other(format!(
                        "REST {status} {}: {}",
                        body["code"], body["message"]
                    )),
                }
            }
        };
        pause.after(&answer).await;
        sent.push(Sent {
            front: "rest",
            client,
            seq,
            answer,
        });
    }
    sent
}

async fn grpc_client(gateway: String, client: usize, until: Instant) -> Vec<Sent> {
    let kv = Client::connect(&gateway).await.unwrap();
    let mut pause = Pause::new(client);
    let mut sent = Vec::new();
    for seq in 0.. {
        if Instant::now() >= until {
            break;
        }
        let ops = batch_keys("grpc", client, seq)
            .into_iter()
            .map(|key| {
                let value = Bytes::from(value_of(&key));
                (Bytes::from(key), Some(value))
            })
            .collect();
        let answer = match kv.batch(ops).await {
            Ok(_) => Answer::Applied,
            Err(ClientError::Status(s))
                if matches!(s.code(), Code::ResourceExhausted | Code::Unavailable)
                    && s.metadata()
                        .get("x-strata-retryable")
                        .is_some_and(|v| v == "true") =>
            {
                Answer::Refused
            }
            Err(ClientError::Status(s)) => {
                let unknown = if s.message().contains("OUTCOME_UNKNOWN") {
                    " OUTCOME_UNKNOWN"
                } else {
                    ""
                };
                Answer::Other(format!("gRPC {:?}{unknown}", s.code()))
            }
            Err(e) => Answer::Other(format!("gRPC {e}")),
        };
        pause.after(&answer).await;
        sent.push(Sent {
            front: "grpc",
            client,
            seq,
            answer,
        });
    }
    sent
}

/// A node's resident memory, from `/proc/<pid>/status`.
fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Each node's own term, from its `/v1/cluster/status`.
async fn terms(c: &Cluster) -> BTreeMap<u64, u64> {
    let mut terms = BTreeMap::new();
    for id in c.node_ids() {
        let status: Value = c
            .http()
            .get(format!("{}/v1/cluster/status", c.node_url(id)))
            .send()
            .await
            .expect("the node answers")
            .json()
            .await
            .expect("a status");
        terms.insert(id, status["term"].as_u64().expect("a term"));
    }
    terms
}

/// Samples every node's resident memory until `stop`; returns each node's
/// peak.
fn watch_memory(
    pids: Vec<(u64, u32)>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Vec<(u64, u64)>> {
    tokio::spawn(async move {
        let mut peaks: Vec<(u64, u64)> = pids.iter().map(|&(id, _)| (id, 0)).collect();
        while !stop.load(Ordering::Relaxed) {
            for (peak, &(_, pid)) in peaks.iter_mut().zip(&pids) {
                peak.1 = peak.1.max(rss_bytes(pid).unwrap_or(0));
            }
            tokio::time::sleep(SAMPLE_EVERY).await;
        }
        peaks
    })
}

/// Reads every key of every batch back through the gateway; returns the
/// keys that do not hold what their batch's answer promised.
async fn check_contents(gateway: &str, sent: Vec<Sent>) -> Vec<String> {
    let sent = Arc::new(sent);
    let readers = 4;
    let mut tasks = tokio::task::JoinSet::new();
    for reader in 0..readers {
        let (sent, gateway) = (sent.clone(), gateway.to_string());
        tasks.spawn(async move {
            let kv = Client::connect(&gateway).await.unwrap();
            let mut wrong = Vec::new();
            for s in sent.iter().skip(reader).step_by(readers) {
                let must_exist = match s.answer {
                    Answer::Applied => true,
                    Answer::Refused => false,
                    Answer::Other(_) => continue,
                };
                for key in batch_keys(s.front, s.client, s.seq) {
                    let got = kv.get(key.clone(), false).await;
                    let ok = match got {
                        Ok(Some(v)) => must_exist && v[..] == value_of(&key)[..],
                        Ok(None) => !must_exist,
                        Err(e) => {
                            wrong.push(format!("{key}: read failed: {e}"));
                            continue;
                        }
                    };
                    if !ok {
                        wrong.push(format!("{key}: answered {:?}", s.answer));
                    }
                }
            }
            wrong
        });
    }
    let mut wrong = Vec::new();
    while let Some(w) = tasks.join_next().await {
        wrong.extend(w.unwrap());
    }
    wrong
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs release nodes and both cores for a minute: ./dev test-large-writes"]
async fn maximum_size_batches_for_a_minute_are_pushed_back_without_elections() {
    // Proves: 24 clients sending 15 MiB batches through the gateway (each
    // pausing after a refusal, see `Pause`), half
    // over REST and half over gRPC, for RUN_FOR, get only "applied" and
    // "not applied, retry" answers (no 504 / DEADLINE_EXCEEDED / UNKNOWN),
    // the leader keeps its term on every node (no election), no node's
    // resident memory passes RSS_BOUND_BYTES, every applied batch reads back
    // exactly and every refused one is absent.
    let c = Cluster::start(3).await.unwrap();
    let gateway = c.gateway_url();
    Client::connect(&gateway)
        .await
        .unwrap()
        .put("warm-up", "v")
        .await
        .unwrap();
    let before = terms(&c).await;
    let pids = c
        .node_ids()
        .into_iter()
        .map(|id| (id, c.pid(id).expect("running")))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let memory = watch_memory(pids, stop.clone());

    let started = Instant::now();
    let until = started + RUN_FOR;
    let c = Arc::new(c);
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..CLIENTS_PER_FRONT {
        let cluster = c.clone();
        clients.spawn(async move { rest_client(&cluster, client, until).await });
        clients.spawn(grpc_client(gateway.clone(), client, until));
    }
    let mut sent = Vec::new();
    while let Some(s) = clients.join_next().await {
        sent.extend(s.unwrap());
    }
    let took = started.elapsed();
    let after = terms(&c).await;
    stop.store(true, Ordering::Relaxed);
    let peaks = memory.await.unwrap();

    let mut answers: BTreeMap<Answer, usize> = BTreeMap::new();
    for s in &sent {
        *answers.entry(s.answer.clone()).or_default() += 1;
    }
    let elections = c
        .node_ids()
        .iter()
        .map(|id| after[id] - before[id])
        .max()
        .unwrap_or(0);
    let peak_mib: Vec<(u64, u64)> = peaks.iter().map(|&(id, b)| (id, b >> 20)).collect();
    // What each node said of its raft thread's stalls (at most one line a
    // second each, once a stall passes half the election timeout), of slow
    // log writes and applies (at most one line a second of each, from a
    // second on), and of writes answered outcome unknown.
    let said = |needle: &str| -> Vec<(u64, usize)> {
        c.node_ids()
            .into_iter()
            .map(|id| {
                let n = c
                    .node_log(id)
                    .lines()
                    .filter(|l| l.contains(needle))
                    .count();
                (id, n)
            })
            .collect()
    };
    let stalls = said("heartbeats and their answers waited");
    let slow_log_writes = said("a raft log write took");
    let slow_applies = said("to the storage engine took");
    let unknown = said("a write was answered OUTCOME_UNKNOWN");
    let write_stalls = said("write stalled: the engine's background work is behind");
    // What the gateway said of the requests it answered with neither 200
    // nor 503: its response flags, tries and times.
    let gateway_other: Vec<String> = std::fs::read_to_string(c.log_dir().join("envoy-access.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| !matches!(v["status"].as_u64(), Some(200 | 503)))
        .map(|v| {
            format!(
                "{} {} flags {} details {} attempts {} took {} ms (upstream {} ms) from {}",
                v["path"],
                v["status"],
                v["flags"],
                v["details"],
                v["attempts"],
                v["duration_ms"],
                v["upstream_ms"],
                v["upstream"]
            )
        })
        .collect();
    let summary = format!(
        "{} batches in {took:?}: {answers:?}; terms before {before:?}, after {after:?}; \
         peak RSS MiB by node {peak_mib:?}; lines by node: raft thread stalls {stalls:?}, \
         slow log writes {slow_log_writes:?}, slow applies {slow_applies:?}, \
         engine write stalls {write_stalls:?}, outcome unknown {unknown:?}; gateway answers other than 200 and 503: \
         {gateway_other:#?}; logs in {}",
        sent.len(),
        c.log_dir().display()
    );
    eprintln!("{summary}");
    let wrong = check_contents(&gateway, sent).await;

    assert!(
        answers.contains_key(&Answer::Applied),
        "no batch was applied: {summary}"
    );
    let others: Vec<&Answer> = answers
        .keys()
        .filter(|a| matches!(a, Answer::Other(_)))
        .collect();
    assert!(
        others.is_empty(),
        "answers other than applied or not-applied: {others:?}; {summary}"
    );
    assert_eq!(
        elections, 0,
        "the leader changed under its own load: {summary}"
    );
    for &(id, peak) in &peaks {
        assert!(
            peak <= RSS_BOUND_BYTES,
            "node {id} reached {} MiB resident, over {} MiB: {summary}",
            peak >> 20,
            RSS_BOUND_BYTES >> 20
        );
    }
    assert!(
        wrong.is_empty(),
        "{} keys do not hold what their answer promised, first {:?}: {summary}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
}
