//! The consistency canary against a real cluster: it catches stale reads
//! served by a follower that lags (the test-only fault `--fault-stale-reads`)
//! and stays silent, while completing its checks, through a leader kill,
//! restart and pause.

use std::time::{Duration, Instant};

use strata_harness::{Cluster, metric_value as value};

const VIOLATIONS: &str = "strata_canary_violations_total";
const WINDOWS_OK: &str = "strata_canary_windows_total{verdict=\"ok\"}";

/// Waits until every node in `ids` has checked at least `at_least[i]`
/// windows and found them linearizable.
async fn wait_ok_windows(c: &Cluster, ids: &[u64], at_least: &[f64], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let mut counts = Vec::new();
        for id in ids {
            counts.push(value(&c.scrape(*id).await, WINDOWS_OK));
        }
        if counts.iter().zip(at_least).all(|(n, min)| n >= min) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "ok windows {counts:?} on nodes {ids:?}, wanted {at_least:?} (logs in {})",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reads_on_a_lagging_follower_are_caught_by_its_canary() {
    // Proves: a follower that serves linearizable reads from its own state
    // (the test-only fault) while it lags behind the leader is caught by its
    // own canary: its violations counter rises, and GET /v1/canary shows the
    // offending history. The follower is made to lag by freezing it while
    // the others commit a backlog: once thawed, its canary's writes are
    // acknowledged by the leader before the follower has applied them.
    let c = Cluster::start_with_args_and_env(
        3,
        &[
            "--canary",
            "--canary-rate",
            "40",
            "--canary-window-secs",
            "2",
            "--fault-stale-reads",
        ],
        &[("STRATA_ALLOW_FAULTS", "1")],
    )
    .await
    .unwrap();
    let follower = c.follower().await.unwrap();
    let value_4k = "x".repeat(4096);
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut round = 0;
    loop {
        round += 1;
        c.pause(follower).unwrap();
        // A backlog the follower must append and apply once it runs again.
        let mut writes = tokio::task::JoinSet::new();
        for i in 0..200 {
            let (http, url, body) = (
                c.http().clone(),
                format!("{}/v1/kv/backlog-{round}-{i}", c.gateway_url()),
                value_4k.clone(),
            );
            writes.spawn(async move { http.put(url).body(body).send().await.map(|r| r.status()) });
        }
        while writes.join_next().await.is_some() {}
        c.resume(follower).unwrap();
        // Two windows' time for the canary to probe and check.
        tokio::time::sleep(Duration::from_secs(5)).await;
        if value(&c.scrape(follower).await, VIOLATIONS) > 0.0 {
            eprintln!("node {follower}: violation found after {round} round(s)");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no violation on node {follower} after {round} rounds (logs in {})",
            c.log_dir().display()
        );
    }
    let report: serde_json::Value = c
        .http()
        .get(format!("{}/v1/canary", c.node_url(follower)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    eprintln!(
        "node {follower}'s latest violation: {}",
        report["last_violation"]
    );
    assert_eq!(report["enabled"], true);
    assert!(
        report["windows_violation"].as_u64().unwrap() > 0,
        "{report}"
    );
    let history = report["last_violation"]["history"].as_array().unwrap();
    assert!(!history.is_empty(), "{report}");
    assert!(
        report["last_violation"]["key"]
            .as_str()
            .unwrap()
            .starts_with("__strata_canary/"),
        "{report}"
    );
    assert!(
        c.node_log(follower)
            .contains("canary: history is not linearizable"),
        "the violation is logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_stays_silent_through_a_leader_kill_restart_and_pause() {
    // Proves: without the fault, every node's canary keeps completing its
    // checks with the verdict ok through a kill -9 of the leader, the
    // election after it and the old leader's restart and catch-up, then a
    // SIGSTOP of the leader long enough for another to be elected and its
    // SIGCONT, and never reports a violation: operations cut off by the kill (outcome
    // unknown, or refused) are accounted for, not mistaken for anomalies.
    let mut c = Cluster::start_with_args(
        3,
        &[
            "--canary",
            "--canary-rate",
            "20",
            "--canary-window-secs",
            "2",
        ],
    )
    .await
    .unwrap();
    let ids = c.node_ids();
    wait_ok_windows(&c, &ids, &[1.0; 3], Duration::from_secs(30)).await;
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    let survivors: Vec<u64> = ids.iter().copied().filter(|id| *id != leader).collect();
    let mut before = Vec::new();
    for id in &survivors {
        before.push(value(&c.scrape(*id).await, WINDOWS_OK));
    }
    assert_eq!(value(&c.scrape(leader).await, VIOLATIONS), 0.0);
    c.kill(leader).unwrap();
    c.wait_gateway_leader(Duration::from_secs(15))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    c.start_node(leader).unwrap();
    // The survivors check further windows; the restarted node's counters
    // start again from zero.
    let wanted: Vec<f64> = before.iter().map(|n| n + 3.0).collect();
    wait_ok_windows(&c, &survivors, &wanted, Duration::from_secs(60)).await;
    wait_ok_windows(&c, &[leader], &[2.0], Duration::from_secs(60)).await;

    // Then the leader frozen long enough to be deposed, and thawed: it
    // comes back believing it leads, with requests in flight.
    let paused = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let mut before = Vec::new();
    for id in &ids {
        before.push(value(&c.scrape(*id).await, WINDOWS_OK));
    }
    c.pause(paused).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    c.resume(paused).unwrap();
    let wanted: Vec<f64> = before.iter().map(|n| n + 3.0).collect();
    wait_ok_windows(&c, &ids, &wanted, Duration::from_secs(60)).await;
    for id in &ids {
        let text = c.scrape(*id).await;
        let ops: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("strata_canary_ops_total"))
            .collect();
        eprintln!("node {id}: {ops:?}");
        assert_eq!(
            value(&text, VIOLATIONS),
            0.0,
            "node {id} reported a violation (logs in {})",
            c.log_dir().display()
        );
    }
}
