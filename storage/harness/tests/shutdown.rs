//! A rolling restart under load: every node is stopped with SIGTERM and
//! started again, one at a time, while writers go through the gateway over
//! REST and gRPC. Each writer reads the answers as the contract says:
//! 200 applied, 503 / UNAVAILABLE certainly not applied, 504 /
//! DEADLINE_EXCEEDED outcome unknown; the end state must agree with them.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use strata_client::{Client, ClientError, ScanSelector};
use strata_harness::Cluster;
use tonic::Code;

/// How long the writers run with all three nodes up, before the first
/// stop and after each restart, at the least.
const SETTLE: Duration = Duration::from_millis(700);
/// How many writes each writer has acknowledged in every such span, at the
/// least: on a loaded machine 700 ms may hold only a few.
const SETTLE_WRITES: u64 = 12;
/// How long a span may take to hold them before the load counts as stuck.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);
/// Well under the node's 2 s grace for requests in flight at its stop: a
/// stop that takes longer held a request until the grace ran out.
const STOP_LIMIT: Duration = Duration::from_millis(1500);
/// How long a counter's writer keeps trying to read it once told to stop.
const FINAL_READ_LIMIT: Duration = Duration::from_secs(10);

/// How a write ended, as the contract reads its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// 200; for a compare-and-swap, whether it swapped.
    Applied { swapped: bool },
    /// 503 / UNAVAILABLE: certainly not applied.
    NotApplied,
    /// 504 / DEADLINE_EXCEEDED: may or may not be applied.
    Unknown,
    /// Anything else: the contract does not allow it here.
    Unexpected(String),
}

/// One front end of the gateway.
#[derive(Clone)]
enum Front {
    Rest {
        http: reqwest::Client,
        gateway: String,
    },
    Grpc(Box<Client>),
}

impl Front {
    fn name(&self) -> &'static str {
        match self {
            Front::Rest { .. } => "rest",
            Front::Grpc(_) => "grpc",
        }
    }

    async fn put(&self, key: &str) -> Outcome {
        match self {
            Front::Rest { http, gateway } => {
                let r = http
                    .put(format!("{gateway}/v1/kv/{key}"))
                    .body(key.to_string())
                    .send()
                    .await;
                rest_outcome(r).await.map_or_else(|o| o, |_| applied(true))
            }
            Front::Grpc(client) => grpc_outcome(client.put(key.to_string(), key.to_string()).await)
                .map_or_else(|o| o, |_| applied(true)),
        }
    }

    /// Swaps the counter at `key` from `from` (0: absent) to `from + 1`.
    async fn increment(&self, key: &str, from: u64) -> Outcome {
        let expected = (from > 0).then(|| from.to_string());
        let value = (from + 1).to_string();
        match self {
            Front::Rest { http, gateway } => {
                let r = http
                    .post(format!("{gateway}/v1/cas"))
                    .json(&json!({"key": key, "expected": expected, "value": value}))
                    .send()
                    .await;
                match rest_outcome(r).await {
                    Ok(body) => {
                        let body: Value = serde_json::from_str(&body).unwrap_or_default();
                        applied(body["succeeded"] == true)
                    }
                    Err(o) => o,
                }
            }
            Front::Grpc(client) => {
                let r = client
                    .compare_and_swap(
                        key.to_string(),
                        expected.map(Into::into),
                        Some(value.into()),
                    )
                    .await;
                grpc_outcome(r).map_or_else(|o| o, |(swapped, _)| applied(swapped))
            }
        }
    }

    /// The counter at `key` (0 when absent), or `None` when the read failed.
    async fn read(&self, key: &str) -> Option<u64> {
        let text = match self {
            Front::Rest { http, gateway } => {
                let r = http
                    .get(format!("{gateway}/v1/kv/{key}"))
                    .send()
                    .await
                    .ok()?;
                match r.status() {
                    StatusCode::OK => r.text().await.ok()?,
                    StatusCode::NOT_FOUND => return Some(0),
                    _ => return None,
                }
            }
            Front::Grpc(client) => match client.get(key.to_string(), false).await.ok()? {
                Some(bytes) => String::from_utf8(bytes.to_vec()).ok()?,
                None => return Some(0),
            },
        };
        text.parse().ok()
    }
}

fn applied(swapped: bool) -> Outcome {
    Outcome::Applied { swapped }
}

/// A REST answer: the body of a 200, or the outcome of anything else.
async fn rest_outcome(r: reqwest::Result<reqwest::Response>) -> Result<String, Outcome> {
    let r = r.map_err(|e| Outcome::Unexpected(format!("no answer from the gateway: {e}")))?;
    let status = r.status();
    let body = r.text().await.unwrap_or_default();
    match status {
        StatusCode::OK => Ok(body),
        StatusCode::SERVICE_UNAVAILABLE => Err(Outcome::NotApplied),
        StatusCode::GATEWAY_TIMEOUT => Err(Outcome::Unknown),
        other => Err(Outcome::Unexpected(format!("{other}: {body}"))),
    }
}

fn grpc_outcome<T>(r: Result<T, ClientError>) -> Result<T, Outcome> {
    r.map_err(|e| match &e {
        ClientError::Status(s) if s.code() == Code::Unavailable => Outcome::NotApplied,
        ClientError::Status(s) if s.code() == Code::DeadlineExceeded => Outcome::Unknown,
        _ => Outcome::Unexpected(e.to_string()),
    })
}

/// What a writer of unique keys saw.
#[derive(Debug, Default)]
struct KeyLog {
    acked: Vec<String>,
    not_applied: Vec<String>,
    unknown: Vec<String>,
    unexpected: Vec<String>,
}

/// Puts `<front>-<n>` = same, one after another, until `stop` is set;
/// counts acknowledged ones in `done`.
async fn write_keys(
    front: Front,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> (&'static str, KeyLog) {
    let mut log = KeyLog::default();
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let key = format!("{}-{i:06}", front.name());
        match front.put(&key).await {
            Outcome::Applied { .. } => {
                log.acked.push(key);
                done.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::NotApplied => log.not_applied.push(key),
            Outcome::Unknown => log.unknown.push(key),
            Outcome::Unexpected(e) => log.unexpected.push(format!("{key}: {e}")),
        }
    }
    (front.name(), log)
}

/// What a counter's only writer saw. Before every increment it reads the
/// counter, which settles the outcome of the one before: a 503 must have
/// left it alone, a 504 may have added one, a 200 must have added one.
#[derive(Debug, Default)]
struct CounterLog {
    increments: u64,
    not_applied: u64,
    unknown_applied: u64,
    unknown_not_applied: u64,
    /// Reads that failed (and were tried again).
    reads_failed: u64,
    /// The longest a read and a swap took, so that a counter that made
    /// little progress shows where its time went.
    slowest_read: Duration,
    slowest_swap: Duration,
    /// Answers the counter contradicts: a write applied twice, or one
    /// answered "not applied" that was.
    violations: Vec<String>,
    unexpected: Vec<String>,
    value: u64,
}

impl CounterLog {
    /// Checks `current` against what the answers so far imply.
    fn settle(&mut self, current: u64, last: &Outcome) {
        let expected = self.value;
        match last {
            Outcome::Unknown if current == expected + 1 => self.unknown_applied += 1,
            Outcome::Unknown if current == expected => self.unknown_not_applied += 1,
            _ if current == expected => {}
            _ => self.violations.push(format!(
                "the counter is {current} where the answers imply {expected} (last answer {last:?})"
            )),
        }
        self.value = current;
    }
}

/// Increments the counter `<front>-counter` by compare-and-swap until `stop`
/// is set; this task is its only writer. Counts increments in `done`.
async fn count(front: Front, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) -> CounterLog {
    let key = format!("{}-counter", front.name());
    let mut log = CounterLog::default();
    // Nothing sent yet: as good as not applied.
    let mut last = Outcome::NotApplied;
    let mut stopped_at = None;
    loop {
        let began = Instant::now();
        let read = front.read(&key).await;
        log.slowest_read = log.slowest_read.max(began.elapsed());
        let Some(current) = read else {
            log.reads_failed += 1;
            if stop.load(Ordering::Relaxed)
                && stopped_at.get_or_insert_with(Instant::now).elapsed() > FINAL_READ_LIMIT
            {
                log.violations
                    .push(format!("{key} could not be read at the end"));
                return log;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        log.settle(current, &last);
        if stop.load(Ordering::Relaxed) {
            return log;
        }
        let began = Instant::now();
        last = front.increment(&key, current).await;
        log.slowest_swap = log.slowest_swap.max(began.elapsed());
        match &last {
            Outcome::Applied { swapped: true } => {
                log.increments += 1;
                log.value += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Applied { swapped: false } => log.violations.push(format!(
                "the swap from {current} failed: an earlier write was applied"
            )),
            Outcome::NotApplied => log.not_applied += 1,
            Outcome::Unknown => {}
            Outcome::Unexpected(e) => log.unexpected.push(e.clone()),
        }
    }
}

/// Waits until restarted node `id` has caught up with a write made after
/// its start.
async fn wait_caught_up(c: &Cluster, id: u64) {
    let marker = format!("restarted-{id}");
    c.put_until_ok(&marker, "yes", Duration::from_secs(20))
        .await
        .unwrap();
    let url = format!("{}/v1/kv/{marker}?consistency=stale", c.node_url(id));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .http()
            .get(&url)
            .timeout(Duration::from_secs(1))
            .send()
            .await;
        if r.is_ok_and(|r| r.status() == StatusCode::OK) {
            return;
        }
        assert!(Instant::now() < deadline, "node {id} did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What Envoy counted of the answers the nodes gave it.
#[derive(Debug, Clone, Copy, Default)]
struct Gateway {
    /// Attempts it retried.
    retries: u64,
    /// 503s from a node that it retried.
    retried_503: u64,
    /// 503s and 504s from a node that it passed on to the client.
    passed_503: u64,
    passed_504: u64,
}

impl Gateway {
    async fn read(c: &Cluster) -> Gateway {
        let stats = c
            .http()
            .get(format!(
                "{}/stats?format=json&filter=^cluster.nodes",
                c.admin_url()
            ))
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap();
        let stat = |name: &str| -> u64 {
            let stats = stats["stats"].as_array().into_iter().flatten();
            stats
                .filter(|s| s["name"] == format!("cluster.nodes.{name}"))
                .filter_map(|s| s["value"].as_u64())
                .sum()
        };
        Gateway {
            retries: stat("upstream_rq_retry"),
            retried_503: stat("retry.upstream_rq_503"),
            passed_503: stat("upstream_rq_503"),
            passed_504: stat("upstream_rq_504"),
        }
    }

    /// What was counted since `before`.
    fn since(self, before: Gateway) -> Gateway {
        Gateway {
            retries: self.retries - before.retries,
            retried_503: self.retried_503 - before.retried_503,
            passed_503: self.passed_503 - before.passed_503,
            passed_504: self.passed_504 - before.passed_504,
        }
    }
}

/// Every key under `prefix`, read back through the gateway.
async fn keys_under(client: &Client, prefix: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut token = Vec::new();
    loop {
        let page = client
            .scan(ScanSelector::Prefix(prefix.into()), 1000, token, true)
            .await
            .unwrap();
        keys.extend(
            page.kvs
                .iter()
                .map(|kv| String::from_utf8_lossy(&kv.key).into_owned()),
        );
        if page.next_page_token.is_empty() {
            return keys;
        }
        token = page.next_page_token;
    }
}

/// Writers through the gateway, two of unique keys and two counters,
/// one of each over REST and over gRPC.
struct Load {
    stop: Arc<AtomicBool>,
    key_writers: Vec<tokio::task::JoinHandle<(&'static str, KeyLog)>>,
    counters: Vec<tokio::task::JoinHandle<CounterLog>>,
    /// Each writer's acknowledged writes so far, by name.
    done: Vec<(String, Arc<AtomicU64>)>,
    grpc: Client,
    /// Envoy's counts before the load began.
    gateway: Gateway,
}

impl Load {
    async fn start(c: &Cluster) -> Load {
        let gateway = Gateway::read(c).await;
        let grpc = Client::connect(&c.gateway_url()).await.unwrap();
        let rest = Front::Rest {
            http: c.http().clone(),
            gateway: c.gateway_url(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let fronts = [rest, Front::Grpc(Box::new(grpc.clone()))];
        let mut done = Vec::new();
        let mut counted = |name: String| {
            let n = Arc::new(AtomicU64::new(0));
            done.push((name, n.clone()));
            n
        };
        let key_writers = fronts
            .iter()
            .map(|f| {
                let n = counted(format!("{} puts", f.name()));
                tokio::spawn(write_keys(f.clone(), stop.clone(), n))
            })
            .collect();
        let counters = fronts
            .into_iter()
            .map(|f| {
                let n = counted(format!("{} counter", f.name()));
                tokio::spawn(count(f, stop.clone(), n))
            })
            .collect();
        Load {
            stop,
            key_writers,
            counters,
            done,
            grpc,
            gateway,
        }
    }

    /// Lets the writers run for `SETTLE` and until each has acknowledged
    /// `SETTLE_WRITES` more writes; fails if one makes no such progress
    /// within `SETTLE_LIMIT`.
    async fn settle(&self) {
        let began = Instant::now();
        let from: Vec<u64> = self
            .done
            .iter()
            .map(|(_, n)| n.load(Ordering::Relaxed))
            .collect();
        tokio::time::sleep(SETTLE).await;
        for ((name, n), from) in self.done.iter().zip(from) {
            while n.load(Ordering::Relaxed) < from + SETTLE_WRITES {
                assert!(
                    began.elapsed() < SETTLE_LIMIT,
                    "{name}: fewer than {SETTLE_WRITES} writes acknowledged in {SETTLE_LIMIT:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    /// Stops the writers and checks every answer against what the cluster
    /// holds: acknowledged keys are there, keys answered 503 are not, each
    /// counter agrees with its writer's answers, and nothing but 200, 503
    /// and 504 came back.
    async fn stop_and_check(self, c: &Cluster) {
        self.stop.store(true, Ordering::Relaxed);
        let g = Gateway::read(c).await.since(self.gateway);
        eprintln!(
            "gateway: {} retries, {} of them after a node's 503; passed on {} 503s and {} 504s from nodes",
            g.retries, g.retried_503, g.passed_503, g.passed_504
        );
        for w in self.key_writers {
            let (front, log) = w.await.unwrap();
            eprintln!(
                "{front} puts: {} acknowledged, {} answered 503, {} answered 504",
                log.acked.len(),
                log.not_applied.len(),
                log.unknown.len()
            );
            assert!(log.unexpected.is_empty(), "{front}: {:?}", log.unexpected);
            // Every span of `settle` saw this many at the least.
            assert!(
                log.acked.len() as u64 >= 2 * SETTLE_WRITES,
                "{front}: the writer made little progress"
            );
            let held = keys_under(&self.grpc, &format!("{front}-")).await;
            for key in &log.acked {
                assert!(held.contains(key), "acknowledged {key} is lost");
            }
            for key in &log.not_applied {
                assert!(!held.contains(key), "{key} was answered 503 yet applied");
            }
        }
        for w in self.counters {
            let log = w.await.unwrap();
            eprintln!("counter: {log:?}");
            assert!(log.violations.is_empty(), "{:?}", log.violations);
            assert!(log.unexpected.is_empty(), "{:?}", log.unexpected);
            assert!(
                log.increments >= 2 * SETTLE_WRITES,
                "the counter made little progress"
            );
        }
    }
}

/// Asserts that node `id`, stopped while it led, handed leadership over
/// before it stopped.
fn assert_handed_over(c: &Cluster, id: u64) {
    assert!(
        c.node_log(id).contains("leadership moved"),
        "node {id} stopped as leader without handing over; logs in {}",
        c.log_dir().display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_restart_under_load_keeps_every_answer_true() {
    // Proves: restarting every node in turn with SIGTERM while writers run
    // over REST and gRPC loses no acknowledged write, applies none twice,
    // leaves every write answered 503 unapplied, and answers nothing but
    // 200, 503 and 504; a stopping leader hands its office over first.
    let mut c = Cluster::start(3).await.unwrap();
    let load = Load::start(&c).await;
    load.settle().await;
    let mut led = Vec::new();
    for id in c.node_ids() {
        let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
        let took = c.stop(id, Duration::from_secs(10)).await.unwrap();
        eprintln!(
            "node {id} (leader: {}) stopped {took:?} after SIGTERM",
            leader == id
        );
        assert!(took < STOP_LIMIT, "node {id} took {took:?} to stop");
        if leader == id {
            led.push(id);
        }
        c.start_node(id).unwrap();
        wait_caught_up(&c, id).await;
        load.settle().await;
    }
    load.stop_and_check(&c).await;
    assert!(!led.is_empty(), "no leader was stopped");
    for id in led {
        assert_handed_over(&c, id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_slow_to_replace_leader_answers_no_applied_write_503() {
    // Proves: with elections slower than the node's shutdown grace (so that
    // the followers do not replace the stopping leader while it still
    // waits for its writes in flight), stopping the leader with SIGTERM
    // under load still answers no write that ends up applied with 503,
    // which the gateway would retry.
    let mut c = Cluster::start_with_args(3, &["--election-ticks", "300"])
        .await
        .unwrap();
    let load = Load::start(&c).await;
    load.settle().await;
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let took = c.stop(leader, Duration::from_secs(20)).await.unwrap();
    eprintln!("leader {leader} stopped {took:?} after SIGTERM");
    assert!(took < STOP_LIMIT, "the leader took {took:?} to stop");
    c.start_node(leader).unwrap();
    wait_caught_up(&c, leader).await;
    load.settle().await;
    load.stop_and_check(&c).await;
    assert_handed_over(&c, leader);
}
