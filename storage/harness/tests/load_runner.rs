//! The load runner against a real one-node cluster behind Envoy, with the
//! real k6 (`STRATA_K6`, else `k6` on the PATH): what it refuses, one run at
//! a time, a run that ends by itself, and a run stopped on request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use strata_auth::{KeyPair, Role, Verifier};
use strata_harness::load_runner::http::{RUN_EVENTS_HEARTBEAT, router};
use strata_harness::load_runner::{Runner, RunnerConfig};
use strata_harness::{Cluster, free_port, k6_binary, loadtest_dir};

/// Serves a runner for `target` on a free port; answers its base URL, k6's
/// REST API address and k6's dashboard address.
async fn serve_runner(target: String) -> (String, String, String) {
    serve_runner_with(target, None).await
}

/// [`serve_runner`], starting and stopping runs only for admin tokens of
/// `keys` when given.
async fn serve_runner_with(
    target: String,
    keys: Option<Arc<Verifier>>,
) -> (String, String, String) {
    let k6_address = format!("127.0.0.1:{}", free_port());
    let dashboard = format!("127.0.0.1:{}", free_port());
    let runner = Runner::new(RunnerConfig {
        k6: k6_binary(),
        scripts: loadtest_dir(),
        target,
        k6_address: k6_address.clone(),
        k6_dashboard_address: dashboard.clone(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(runner, keys)).await });
    (base, k6_address, dashboard)
}

/// Reads k6's dashboard event stream at `address` until a `snapshot` event
/// (one period's aggregates) arrives; answers its data line.
async fn first_snapshot(http: &reqwest::Client, address: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut r) = http.get(format!("http://{address}/events")).send().await {
            let mut text = String::new();
            while let Ok(Some(chunk)) = r.chunk().await {
                text.push_str(&String::from_utf8_lossy(&chunk));
                // Whole events only: each ends with a blank line, its fields in any order.
                let whole = text.rfind("\n\n").map_or("", |end| &text[..end]);
                let snapshot = whole
                    .split("\n\n")
                    .find(|event| event.lines().any(|l| l == "event: snapshot"));
                if let Some(line) =
                    snapshot.and_then(|e| e.lines().find(|l| l.starts_with("data: ")))
                {
                    return line.to_string();
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "k6's dashboard never sent a snapshot on {address}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn run_state(http: &reqwest::Client, base: &str) -> Value {
    http.get(format!("{base}/load/run"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until the run's state is `want`; answers the run.
async fn wait_state(http: &reqwest::Client, base: &str, want: &str, timeout: Duration) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let run = run_state(http, base).await;
        if run["state"] == want {
            return run;
        }
        assert!(
            Instant::now() < deadline,
            "the run never became {want}: {run}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_refuses_anything_but_a_bundled_scenario_within_bounds() {
    // Proves every parameter is checked server-side, with the API's error
    // body, before k6 is started: nothing runs after any of these.
    let (base, _, _) = serve_runner("http://127.0.0.1:9".into()).await;
    let http = reqwest::Client::new();
    let cases = [
        (
            json!({"scenario": "../../tmp/evil.js", "rate_per_s": 10, "duration_s": 5}),
            "unknown scenario",
        ),
        (
            json!({"scenario": "smoke", "rate_per_s": 0, "duration_s": 5}),
            "rate_per_s must be between 1 and 1000",
        ),
        (
            json!({"scenario": "smoke", "rate_per_s": 5000, "duration_s": 5}),
            "rate_per_s must be between 1 and 1000",
        ),
        (
            json!({"scenario": "smoke", "rate_per_s": 10, "duration_s": 3600}),
            "duration_s must be between 1 and 600",
        ),
        (
            json!({"scenario": "smoke", "rate_per_s": -1, "duration_s": 5}),
            "not a run request",
        ),
        (
            json!({"scenario": "smoke", "rate_per_s": 10, "duration_s": 5, "target": "http://elsewhere"}),
            "unknown field `target`",
        ),
        (json!({"scenario": "smoke"}), "missing field"),
    ];
    for (body, message) in cases {
        let resp = http
            .post(format!("{base}/load/run"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["code"], "INVALID_ARGUMENT", "{err}");
        assert!(
            err["message"].as_str().unwrap().contains(message),
            "{body}: {err}"
        );
    }
    let not_json = http
        .post(format!("{base}/load/run"))
        .body("smoke")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    assert_eq!(run_state(&http, &base).await["state"], "idle");
    let stop = http
        .delete(format!("{base}/load/run"))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), StatusCode::CONFLICT);
    let scenarios: Value = http
        .get(format!("{base}/load/scenarios"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = scenarios["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "smoke", "ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f", "failover"
        ]
    );
    assert_eq!(scenarios["max_rate_per_s"], 1000);
    let unknown = http.get(format!("{base}/load/other")).send().await.unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_or_stopping_a_run_needs_an_admin_token_of_the_clusters_keys() {
    // Proves: with the cluster's keys, a start without a token is 401, with
    // a write-role token 403, with an admin token of another key 401, and
    // nothing runs after them; an admin token gets past the check (its bad
    // body is then 400, its stop a 409 for no run); reading stays open.
    let pair = KeyPair::generate();
    let keys = Arc::new(Verifier::from_jwks(&pair.jwks_json(), "test").unwrap());
    let (base, _, _) = serve_runner_with("http://127.0.0.1:9".into(), Some(keys)).await;
    let token = |role| {
        pair.signer()
            .sign("test", role, Duration::from_secs(600))
            .unwrap()
    };
    let stranger = KeyPair::generate()
        .signer()
        .sign("mallory", Role::Admin, Duration::from_secs(600))
        .unwrap();
    let http = reqwest::Client::new();
    let plan = json!({"scenario": "smoke", "rate_per_s": 10, "duration_s": 5});
    let post = |bearer: Option<String>| {
        let mut req = http.post(format!("{base}/load/run")).json(&plan);
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        req.send()
    };
    for (what, bearer, status, code) in [
        (
            "no token",
            None,
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
        ),
        (
            "a write token",
            Some(token(Role::Write)),
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
        ),
        (
            "another key's admin token",
            Some(stranger),
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
        ),
    ] {
        let refused = post(bearer).await.unwrap();
        assert_eq!(refused.status(), status, "{what}");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["code"], code, "{what}: {body}");
    }
    assert_eq!(
        run_state(&http, &base).await["state"],
        "idle",
        "nothing ran"
    );
    let stop = http
        .delete(format!("{base}/load/run"))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), StatusCode::UNAUTHORIZED);
    let admin = token(Role::Admin);
    let bad_body = http
        .post(format!("{base}/load/run"))
        .bearer_auth(&admin)
        .body("smoke")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_body.status(), StatusCode::BAD_REQUEST, "past the check");
    let stop = http
        .delete(format!("{base}/load/run"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(
        stop.status(),
        StatusCode::CONFLICT,
        "past the check: no run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_at_a_time_that_ends_by_itself_or_when_stopped() {
    // Proves: a smoke run starts k6 with its REST API and its dashboard's
    // event stream on the given addresses against the runner's cluster, a second start is refused while it runs,
    // it ends by itself (its writes in the cluster's counters), and a longer
    // run stops on request as `stopped`.
    let c = Cluster::start(1).await.unwrap();
    let (base, k6_address, dashboard) = serve_runner(c.gateway_url()).await;
    let http = reqwest::Client::new();
    let start = |duration_s: u32| {
        http.post(format!("{base}/load/run"))
            .json(&json!({"scenario": "smoke", "rate_per_s": 20, "duration_s": duration_s}))
            .send()
    };
    let started = start(3).await.unwrap();
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let run: Value = started.json().await.unwrap();
    assert_eq!(run["state"], "running");
    assert_eq!(
        run["plan"],
        json!({"scenario": "smoke", "rate_per_s": 20, "duration_s": 3})
    );
    let again = start(3).await.unwrap();
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let err: Value = again.json().await.unwrap();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("a run of `smoke` is in progress"),
        "{err}"
    );

    // k6's own REST API answers where the gateway's /k6/ route points.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = http
            .get(format!("http://{k6_address}/v1/status"))
            .send()
            .await;
        if status.is_ok_and(|s| s.status().is_success()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "k6's REST API never answered on {k6_address}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And its dashboard's event stream, where the gateway's /k6/events
    // points, sends each second's aggregates.
    let snapshot = first_snapshot(&http, &dashboard).await;
    assert!(snapshot.starts_with("data: [["), "{snapshot}");
    // It ends by itself: `finished`, or `failed` with k6's exit code 99 when
    // a threshold of the script was crossed on a busy host; never killed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let run = run_state(&http, &base).await;
        if run["state"] != "running" {
            break run;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not end by itself: {run}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    match done["state"].as_str() {
        Some("finished") => assert_eq!(done["exit_code"], 0, "{done}"),
        Some("failed") => assert_eq!(done["exit_code"], 99, "{done}"),
        _ => panic!("the run ended as {done}"),
    }
    assert!(done["ended_at_ms"].as_u64().unwrap() > done["started_at_ms"].as_u64().unwrap());
    let metrics = c.scrape(1).await;
    assert!(
        metrics.contains("route=\"PUT /v1/kv/{key}\""),
        "the smoke run's writes reached the node"
    );

    let long = start(60).await.unwrap();
    assert_eq!(long.status(), StatusCode::ACCEPTED);
    wait_state(&http, &base, "running", Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stopping = http
        .delete(format!("{base}/load/run"))
        .send()
        .await
        .unwrap();
    assert_eq!(stopping.status(), StatusCode::OK);
    let stopped = wait_state(&http, &base, "stopped", Duration::from_secs(20)).await;
    assert!(stopped["output"].as_array().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_acts_with_the_token_of_whoever_started_it() {
    // Proves: against a cluster that lets requests without a token do
    // nothing, a smoke run started with an admin token writes (k6 sends the
    // starter's token), and none of its requests is refused 401.
    let c = Cluster::start_closed(1).await.unwrap();
    let jwks = std::fs::read_to_string(c.jwks()).unwrap();
    let keys = Arc::new(Verifier::from_jwks(&jwks, "cluster").unwrap());
    let (base, _, _) = serve_runner_with(c.gateway_url(), Some(keys)).await;
    let http = reqwest::Client::new();
    let started = http
        .post(format!("{base}/load/run"))
        .bearer_auth(c.admin_token())
        .json(&json!({"scenario": "smoke", "rate_per_s": 20, "duration_s": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let run = run_state(&http, &base).await;
        if run["state"] != "running" {
            break run;
        }
        assert!(Instant::now() < deadline, "the run did not end: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let metrics = c.scrape(1).await;
    let count = |code: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("strata_api_requests_total{")
                    && l.contains("route=\"PUT /v1/kv/{key}\"")
                    && l.contains(&format!("code=\"{code}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert!(count("200") > 0, "the run wrote nothing: {done}");
    assert_eq!(count("401"), 0, "requests went without the token: {done}");
    assert_eq!(done["state"], "finished", "{done}");
}

/// One `run` event of `GET /load/run/events`: its view, and when it came.
struct Pushed {
    at: Instant,
    run: Value,
}

/// Follows `GET {base}/load/run/events` on a task of its own; every `run`
/// event goes to the returned receiver. Panics on any other event.
async fn follow_run_events(
    http: &reqwest::Client,
    base: &str,
) -> tokio::sync::mpsc::UnboundedReceiver<Pushed> {
    let resp = http
        .get(format!("{base}/load/run/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut events = resp.bytes_stream().eventsource();
        while let Some(Ok(event)) = events.next().await {
            assert_eq!(event.event, "run", "{}", event.data);
            let run = serde_json::from_str(&event.data).unwrap();
            if tx
                .send(Pushed {
                    at: Instant::now(),
                    run,
                })
                .is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The next pushed view within `within`.
async fn next_pushed(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Pushed>,
    within: Duration,
) -> Pushed {
    tokio::time::timeout(within, rx.recv())
        .await
        .expect("no run event in time")
        .expect("the stream ended")
}

/// Takes pushed views until one's state is `want`; answers it.
async fn pushed_until(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Pushed>,
    want: &[&str],
    within: Duration,
) -> Pushed {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let pushed = next_pushed(rx, left).await;
        if want.iter().any(|w| pushed.run["state"] == *w) {
            return pushed;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_state_is_pushed_as_server_sent_events_at_each_change() {
    // Proves GET /load/run/events: the view at once (idle), then, without
    // asking, each change as it happens: the start (running, with its plan),
    // a stop (stopping, then stopped once k6 has ended), and a run that ends
    // by itself (finished or failed, with k6's exit code); a view is sent
    // again after the heartbeat when nothing changes, so a client can tell a
    // live stream from a dead one; two followers see the same. The target is
    // an address where nothing listens: k6's requests fail, its runs still
    // start and end.
    let (base, _, _) = serve_runner("http://127.0.0.1:9".into()).await;
    let http = reqwest::Client::new();
    let mut events = follow_run_events(&http, &base).await;
    let first = next_pushed(&mut events, Duration::from_secs(2)).await;
    assert_eq!(first.run["state"], "idle", "{}", first.run);
    assert_eq!(first.run["started_at_ms"], 0);

    let started = http
        .post(format!("{base}/load/run"))
        .json(&json!({"scenario": "smoke", "rate_per_s": 5, "duration_s": 60}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let asked = Instant::now();
    let running = pushed_until(&mut events, &["running"], Duration::from_secs(2)).await;
    assert!(
        running.at.duration_since(asked) < Duration::from_secs(1),
        "the start was pushed at once"
    );
    assert_eq!(
        running.run["plan"],
        json!({"scenario": "smoke", "rate_per_s": 5, "duration_s": 60})
    );
    let mut second = follow_run_events(&http, &base).await;
    let joined = next_pushed(&mut second, Duration::from_secs(2)).await;
    assert_eq!(
        joined.run["state"], "running",
        "a late follower starts from now"
    );

    tokio::time::sleep(Duration::from_secs(1)).await;
    let stop = http
        .delete(format!("{base}/load/run"))
        .send()
        .await
        .unwrap();
    assert_eq!(stop.status(), StatusCode::OK);
    let stopping = pushed_until(
        &mut events,
        &["stopping", "stopped"],
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(stopping.run["state"], "stopping", "{}", stopping.run);
    let stopped = pushed_until(&mut events, &["stopped"], Duration::from_secs(20)).await;
    assert!(
        stopped.run["ended_at_ms"].as_u64().unwrap() > 0,
        "{}",
        stopped.run
    );
    let seen_too = pushed_until(&mut second, &["stopped"], Duration::from_secs(20)).await;
    assert_eq!(seen_too.run["ended_at_ms"], stopped.run["ended_at_ms"]);
    drop(second);

    // Nothing changes now: the same view again after the heartbeat, not before.
    while let Ok(pushed) = events.try_recv() {
        assert_eq!(pushed.run["state"], "stopped");
    }
    let quiet_from = Instant::now();
    let again = next_pushed(&mut events, RUN_EVENTS_HEARTBEAT + Duration::from_secs(2)).await;
    assert_eq!(again.run, run_state(&http, &base).await);
    assert!(
        again.at.duration_since(quiet_from) + Duration::from_millis(500) >= RUN_EVENTS_HEARTBEAT
            || again.run["output"] != stopped.run["output"],
        "a view without a change came before the heartbeat"
    );

    // A run that ends by itself is pushed ending.
    let short = http
        .post(format!("{base}/load/run"))
        .json(&json!({"scenario": "smoke", "rate_per_s": 5, "duration_s": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(short.status(), StatusCode::ACCEPTED);
    pushed_until(&mut events, &["running"], Duration::from_secs(2)).await;
    let ended = pushed_until(
        &mut events,
        &["finished", "failed"],
        Duration::from_secs(30),
    )
    .await;
    assert!(ended.run["exit_code"].is_i64(), "{}", ended.run);
    assert_eq!(ended.run, run_state(&http, &base).await);
}
