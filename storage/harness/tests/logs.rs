//! The node's log lines, as its processes write them: a request's lines
//! carry the trace and span ids of the trace the caller's `traceparent`
//! names (without any trace export), and `STRATA_LOG` and `RUST_LOG` set
//! the level.

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use strata_harness::command::NodeSpec;
use strata_harness::{Cluster, free_port, workspace_binary};

/// Turns on the debug line every request ends with, "request answered".
const ACCESS_LOG: &str = "info,strata_server::request_span=debug";

fn traceparent(trace_id: &str, span_id: &str, flags: &str) -> String {
    format!("00-{trace_id}-{span_id}-{flags}")
}

/// The JSON lines of a log, skipping the harness's own lines.
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// The fields of the request span a JSON line was written in, if any.
fn request_span(line: &Value) -> Option<&Value> {
    line["spans"]
        .as_array()?
        .iter()
        .find(|s| s["name"] == "request")
}

/// The "request answered" lines of `log` whose request span is named
/// `route`.
fn answered(log: &str, route: &str) -> Vec<Value> {
    json_lines(log)
        .into_iter()
        .filter(|l| l["fields"]["message"] == "request answered")
        .filter(|l| request_span(l).is_some_and(|s| s["otel.name"] == route))
        .collect()
}

/// The ids a line names (its request span's), if it names any.
fn ids(line: &Value) -> Option<(String, String)> {
    let span = request_span(line)?;
    Some((
        span["trace_id"].as_str()?.to_string(),
        span["span_id"].as_str()?.to_string(),
    ))
}

/// Waits until node `id`'s log holds a "request answered" line for `route`
/// naming `trace_id`; returns its span id.
async fn wait_answered(c: &Cluster, id: u64, route: &str, trace_id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = answered(&c.node_log(id), route)
            .iter()
            .filter_map(ids)
            .find(|(t, _)| t == trace_id);
        if let Some((_, span_id)) = found {
            return span_id;
        }
        assert!(
            Instant::now() < deadline,
            "node {id} logged no `{route}` answered in trace {trace_id}; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn is_span_id(s: &str) -> bool {
    s.len() == 16 && s.chars().all(|c| c.is_ascii_hexdigit()) && s != "0000000000000000"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_lines_name_the_trace_of_the_callers_traceparent_without_export() {
    // Proves: with no trace export configured, a request whose caller sent
    // a traceparent (sampled or not) writes its JSON log lines with that
    // trace's id and a span id of the node's own; a follower that forwards
    // the request passes the trace on, so the leader's lines name it too;
    // a request that arrives without one names no trace.
    let c = Cluster::start_with_args_and_env(
        3,
        &["--log-format", "json"],
        &[("STRATA_LOG", ACCESS_LOG)],
    )
    .await
    .unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let follower = c.follower().await.unwrap();

    // A sampled trace, sent to a follower, which forwards to the leader.
    let (trace, caller_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let r = c
        .http()
        .put(format!("{}/v1/kv/logged", c.node_url(follower)))
        .header("traceparent", traceparent(trace, caller_span, "01"))
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let on_follower = wait_answered(&c, follower, "PUT /v1/kv/{key}", trace).await;
    let on_leader = wait_answered(&c, leader, "/strata.v1.KV/Put", trace).await;
    for span_id in [&on_follower, &on_leader] {
        assert!(is_span_id(span_id), "span id {span_id}");
        assert_ne!(span_id, caller_span, "the node took the caller's span id");
    }
    assert_ne!(on_follower, on_leader);

    // An unsampled trace, through the gateway: still a trace, still named.
    let unsampled = "0af7651916cd43dd8448eb211c80319c";
    let r = c
        .http()
        .put(format!("{}/v1/kv/logged", c.gateway_url()))
        .header(
            "traceparent",
            traceparent(unsampled, "b7ad6b7169203331", "00"),
        )
        .body("w")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    // Envoy sends it to the leader, or to a node that forwards it: some
    // node's lines name the trace.
    let mut named = false;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !named {
        named = c.node_ids().into_iter().any(|id| {
            json_lines(&c.node_log(id))
                .iter()
                .filter(|l| l["fields"]["message"] == "request answered")
                .filter_map(ids)
                .any(|(t, _)| t == unsampled)
        });
        assert!(
            Instant::now() < deadline,
            "no node logged the unsampled trace; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // No traceparent, straight to the leader: no trace, no ids.
    let r = c
        .http()
        .delete(format!("{}/v1/kv/logged", c.node_url(leader)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let lines = answered(&c.node_log(leader), "DELETE /v1/kv/{key}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(ids(&lines[0]), None, "{}", lines[0]);
    assert!(request_span(&lines[0]).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn envoy_without_a_collector_starts_a_trace_for_every_request_and_exports_nothing() {
    // Proves the gateway's tracer is on with no collector: a request that
    // arrives without a traceparent reaches the node with one (the node's
    // lines name a trace Envoy started), one that arrives with a
    // traceparent keeps its trace id, and Envoy opens no connection to
    // export a span.
    let c = Cluster::start_with_args_and_env(
        1,
        &["--log-format", "json"],
        &[("STRATA_LOG", ACCESS_LOG)],
    )
    .await
    .unwrap();
    let put = |traceparent: Option<String>| {
        let mut req = c
            .http()
            .put(format!("{}/v1/kv/gatewayed", c.gateway_url()))
            .body("v");
        if let Some(t) = traceparent {
            req = req.header("traceparent", t);
        }
        req.send()
    };
    assert_eq!(put(None).await.unwrap().status(), 200);
    let started_by_envoy = {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let named: Vec<String> = answered(&c.node_log(1), "PUT /v1/kv/{key}")
                .iter()
                .filter_map(ids)
                .map(|(t, _)| t)
                .collect();
            if let Some(t) = named.first() {
                break t.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the node's PUT lines name no trace: Envoy sent no traceparent; logs in {}",
                c.log_dir().display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    assert_eq!(started_by_envoy.len(), 32, "{started_by_envoy}");
    assert_ne!(started_by_envoy, "0".repeat(32));

    let client = "5c1a9d0e7f3b4a2c8d6e0f1a2b3c4d5e";
    let r = put(Some(traceparent(client, "1a2b3c4d5e6f7081", "01")))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let span_id = wait_answered(&c, 1, "PUT /v1/kv/{key}", client).await;
    assert_ne!(span_id, "1a2b3c4d5e6f7081");

    for counter in [
        "cluster.otel_collector.upstream_cx_total",
        "cluster.otel_collector.upstream_rq_total",
    ] {
        assert_eq!(
            c.envoy_stat(counter)
                .await
                .unwrap_or_else(|| panic!("Envoy has no counter {counter}")),
            0,
            "{counter}"
        );
    }
}

/// One node, a cluster of its own, started with exactly the log variables
/// given (none inherited from the test's environment).
struct LoneNode {
    child: Child,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoneNode {
    async fn start(strata_log: Option<&str>, rust_log: Option<&str>) -> LoneNode {
        let dir = tempfile::tempdir().unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let mut spec = NodeSpec::new(
            1,
            listen.clone(),
            vec![(1, listen.clone())],
            dir.path().join("data"),
        );
        // Its one request is an anonymous write.
        spec.anonymous_role = Some("write".into());
        let log = dir.path().join("node.log");
        let file = std::fs::File::create(&log).unwrap();
        let mut cmd = spec
            .command_line(&workspace_binary("strata-node").unwrap())
            .command();
        cmd.env_remove("STRATA_LOG").env_remove("RUST_LOG");
        if let Some(v) = strata_log {
            cmd.env("STRATA_LOG", v);
        }
        if let Some(v) = rust_log {
            cmd.env("RUST_LOG", v);
        }
        let child = cmd
            .stdout(file.try_clone().unwrap())
            .stderr(Stdio::from(file))
            .spawn()
            .unwrap();
        let node = LoneNode {
            child,
            url: format!("http://{listen}"),
            log,
            _dir: dir,
        };
        node.wait_leader().await;
        node
    }

    async fn wait_leader(&self) {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let r = http.get(format!("{}/health/leader", self.url)).send().await;
            if r.is_ok_and(|r| r.status() == 200) {
                return;
            }
            assert!(Instant::now() < deadline, "{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Makes one request and returns the log once it has been answered,
    /// and the node's own events have had time to be written.
    async fn log_after_a_request(&self) -> String {
        let r = reqwest::Client::new()
            .put(format!("{}/v1/kv/level", self.url))
            .body("v")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.log()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LoneNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strata_log_sets_the_level_and_rust_log_stands_in_for_it() {
    // Proves: without either variable the node logs at info (its leader
    // change, not the debug access line); RUST_LOG alone sets the level;
    // STRATA_LOG, when set, wins over RUST_LOG.
    let default = LoneNode::start(None, None)
        .await
        .log_after_a_request()
        .await;
    assert!(default.contains("leader changed"), "{default}");
    assert!(!default.contains("request answered"), "{default}");

    let rust_log = LoneNode::start(None, Some(ACCESS_LOG))
        .await
        .log_after_a_request()
        .await;
    assert!(rust_log.contains("request answered"), "{rust_log}");

    let strata_log = LoneNode::start(Some(ACCESS_LOG), Some("warn"))
        .await
        .log_after_a_request()
        .await;
    assert!(strata_log.contains("request answered"), "{strata_log}");

    let quiet = LoneNode::start(Some("warn"), Some("debug"))
        .await
        .log_after_a_request()
        .await;
    assert!(!quiet.contains("leader changed"), "{quiet}");
    assert!(!quiet.contains("request answered"), "{quiet}");
    assert!(
        !quiet
            .lines()
            .any(|l| l.contains(" INFO ") || l.contains("DEBUG")),
        "{quiet}"
    );
}

/// `text` without its ANSI colour sequences (ESC [ ... m), which the text
/// format writes around levels, targets and field names.
fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_logs_what_requests_without_a_token_may_do_when_it_starts() {
    // Proves: a node started with each anonymous role (`--anonymous-role`
    // none, read, write) writes one line at start naming that role and
    // what it lets a request without a token do, and no line naming
    // another role.
    for (role, what) in [
        ("none", "nothing"),
        ("read", "reads"),
        ("write", "reads and writes of keys and leases"),
    ] {
        let c = Cluster::start_with_anonymous_role(1, role).await.unwrap();
        let log = without_colours(&c.node_log(1));
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("requests without a token may do:"))
            .collect();
        assert_eq!(lines.len(), 1, "role {role}: {lines:#?}");
        let line = lines[0];
        eprintln!("--anonymous-role {role}: {line}");
        let said = line
            .split("requests without a token may do: ")
            .nth(1)
            .unwrap();
        assert!(
            said.starts_with(&format!("{what} anonymous_role={role} ")),
            "role {role}: {line}"
        );
    }
}
