//! `strata-cluster up --traces` (what `./dev up traces=1` runs): a real
//! Jaeger beside the cluster, Envoy and every node exporting to it, stopped
//! with the rest by `down`.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use strata_harness::run_dir::RunDir;
use strata_harness::{envoy_binary, free_port, jaeger_binary, workspace_binary};

fn launcher(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata-cluster"))
        .args(args)
        .env("STRATA_NODE_BIN", workspace_binary("strata-node").unwrap())
        .output()
        .expect("strata-cluster runs")
}

/// Runs `down` on the run directory when dropped, so that a failing test
/// leaves no process behind.
struct Down<'a>(&'a str);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        launcher(&["down", "--run-dir", self.0]);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The service that recorded `span` in a Jaeger API trace.
fn service<'a>(trace: &'a Value, span: &Value) -> &'a str {
    let process = span["processID"].as_str().unwrap_or_default();
    trace["processes"][process]["serviceName"]
        .as_str()
        .unwrap_or_default()
}

/// The trace, as Jaeger's query API answers it, that holds a span named
/// `name` from service `from`, once it also holds spans from `also` and
/// every span's parent (Envoy sends its spans every few seconds, a
/// parent may come after its children).
async fn trace_with(ui: &str, name: &str, from: &str, also: &str) -> Value {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found: Option<Value> = async {
            let answer: Value = http
                .get(format!("{ui}api/traces"))
                .query(&[("service", from), ("operation", name), ("limit", "20")])
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            answer["data"].as_array()?.iter().find_map(|trace| {
                let spans = trace["spans"].as_array()?;
                let named = spans
                    .iter()
                    .any(|s| s["operationName"] == name && service(trace, s) == from);
                let joined = spans.iter().any(|s| service(trace, s) == also);
                let whole = spans.iter().all(|s| {
                    s["references"].as_array().is_none_or(|refs| {
                        refs.iter()
                            .all(|r| spans.iter().any(|p| p["spanID"] == r["spanID"]))
                    })
                });
                (named && joined && whole).then(|| trace.clone())
            })
        }
        .await;
        if let Some(trace) = found {
            return trace;
        }
        if Instant::now() > deadline {
            let all = http
                .get(format!("{ui}api/traces"))
                .query(&[("service", from), ("limit", "20")])
                .send()
                .await
                .ok();
            let all = match all {
                Some(r) => r.text().await.unwrap_or_default(),
                None => String::new(),
            };
            panic!(
                "Jaeger at {ui} has no whole trace with `{name}` from {from} and spans from {also}: {all}"
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_with_traces_runs_jaeger_and_a_put_is_one_trace_rooted_in_envoy() {
    // Proves `up --traces`: it starts Jaeger and prints its URL; a PUT
    // through the gateway becomes one trace in it whose root span is
    // Envoy's and which holds the node's request span and its raft spans;
    // `down` stops Jaeger with the rest; the node's health probes are not
    // traced. (One node: the trace through a whole group is `tracing.rs`'s.)
    let jaeger = jaeger_binary();
    let dir = tempfile::tempdir().unwrap();
    let envoy = envoy_binary();
    // Free ports are free when picked, not when bound: another process on
    // the machine can take one in between, and the viewer then fails to
    // start. Such a start is tried again on other ports; any other failure
    // is the test's.
    let mut attempt = 0;
    let (run, ports, out) = loop {
        attempt += 1;
        let run = dir.path().join(format!("run-{attempt}"));
        let run = run.to_str().unwrap().to_string();
        let ports = [(); 6].map(|_| free_port().to_string());
        let out = launcher(&[
            "up",
            "--run-dir",
            &run,
            "--nodes",
            "1",
            "--base-port",
            &ports[0],
            "--gateway-port",
            &ports[1],
            "--admin-port",
            &ports[2],
            "--envoy",
            envoy.to_str().unwrap(),
            "--traces",
            "--jaeger",
            jaeger.to_str().unwrap(),
            "--traces-otlp-port",
            &ports[4],
            "--traces-ui-port",
            &ports[5],
            "--no-canary",
            "--timeout",
            "60",
        ]);
        if out.status.success() || attempt == 3 || !text(&out).contains("address already in use") {
            break (run, ports, out);
        }
        eprintln!("a port was taken before the viewer bound it; trying other ports");
        // Whatever that start left running is stopped before the next one.
        drop(Down(&run));
    };
    let run = run.as_str();
    let _down = Down(run);
    let said = text(&out);
    let ui = format!("http://127.0.0.1:{}/", ports[5]);
    assert!(
        out.status.success(),
        "up --traces failed (is Jaeger built? ./dev setup-jaeger): {said}"
    );
    assert!(
        said.contains(&format!("traces (Jaeger)        {ui}")),
        "{said}"
    );

    let gateway = format!("http://127.0.0.1:{}", ports[1]);
    let put = reqwest::Client::new()
        .put(format!("{gateway}/v1/kv/viewed"))
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);

    let trace = trace_with(&ui, "PUT /v1/kv/{key}", "strata-node", "strata-gateway").await;
    let spans = trace["spans"].as_array().unwrap();
    let roots: Vec<&Value> = spans
        .iter()
        .filter(|s| s["references"].as_array().is_none_or(|r| r.is_empty()))
        .collect();
    assert_eq!(roots.len(), 1, "{trace}");
    assert_eq!(service(&trace, roots[0]), "strata-gateway", "{trace}");
    for name in ["raft.propose", "raft.append", "raft.apply"] {
        assert!(
            spans.iter().any(|s| s["operationName"] == name),
            "no {name} in {trace}"
        );
    }
    // Envoy probes the node's health several times a second: none of it
    // is traced, or it would bury the requests.
    let operations: Value = reqwest::Client::new()
        .get(format!("{ui}api/services/strata-node/operations"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let operations = operations["data"].as_array().unwrap();
    assert!(
        !operations.is_empty()
            && operations
                .iter()
                .all(|o| !o.as_str().unwrap_or_default().contains("/health")),
        "{operations:?}"
    );

    // The launcher prints the latest PUT's trace as a tree: Envoy's root
    // first, the node's request under Envoy's spans, raft's under it.
    let out = launcher(&["trace", "--run-dir", run]);
    let tree = text(&out);
    assert!(out.status.success(), "{tree}");
    let lines: Vec<&str> = tree.lines().skip(2).collect();
    let indent = |what: &str| {
        lines
            .iter()
            .find(|l| l.contains(what))
            .map(|l| {
                let span = &l[23..];
                span.len() - span.trim_start().len()
            })
            .unwrap_or_else(|| panic!("no `{what}` in:\n{tree}"))
    };
    assert!(lines[0].ends_with("ingress [strata-gateway]"), "{tree}");
    assert!(indent("PUT /v1/kv/{key} [strata-node 1]") > indent("ingress"));
    assert!(indent("raft.append") > indent("PUT /v1/kv/{key}"), "{tree}");

    let pid = RunDir::new(run).running_pid("jaeger").expect("jaeger runs");
    let out = launcher(&["down", "--run-dir", run]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains(") Z ")),
        "jaeger (pid {pid}) still runs after down"
    );
}
