//! The ranges a cluster reports (`GET /v1/cluster/status` `ranges`,
//! `strata range list`): one raft group today, so one range over every key,
//! with the group's voters, learners and leader as they change.

use std::time::{Duration, Instant};

use serde_json::Value;
use strata_harness::Cluster;

async fn status(c: &Cluster) -> Value {
    reqwest::get(format!("{}/v1/cluster/status", c.gateway_url()))
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// `strata range list` (with `args`) against the gateway; its output.
fn range_list(c: &Cluster, args: &[&str]) -> String {
    let out = std::process::Command::new(strata_harness::workspace_binary("strata").unwrap())
        .args(["--endpoint", &c.gateway_url(), "range", "list"])
        .args(args)
        .env_remove("STRATA_ENDPOINT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until the status's one range satisfies `ok`; the range.
async fn range_until(c: &Cluster, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = status(c).await;
        let ranges = st["ranges"].as_array().cloned().unwrap_or_default();
        if let [range] = &ranges[..] {
            // A node that does not know the configuration yet (one just
            // joined) names no member; it never calls them all learners.
            let none = |field: &str| range[field].as_array().is_none_or(|a| a.is_empty());
            assert!(
                !none("voters") || none("learners"),
                "a range with learners and no voter: {range}"
            );
            if !none("voters") && ok(range) {
                return range.clone();
            }
        }
        assert!(Instant::now() < deadline, "{what} within 30 s: {st}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_one_range_follows_its_groups_members_and_leader() {
    // Proves: the status names one range over every key (empty start and
    // end), its voters the three nodes, no learner, led by the leader the
    // status names; a node joining shows as a learner, and after the
    // leader is killed the range names the new leader and a later term;
    // `strata range list` prints the same, as a table and as JSON.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let leader = c.wait_leader(Duration::from_secs(30)).await.unwrap();
    let range = range_until(&c, "one range led by the leader", |r| {
        r["leader_id"] == leader
    })
    .await;
    assert_eq!(range["start"], "");
    assert_eq!(range["end"], "");
    assert_eq!(range["voters"], serde_json::json!([1, 2, 3]));
    assert_eq!(range["learners"], serde_json::json!([]));
    let term = range["term"].as_u64().unwrap();
    assert!(term > 0);

    let listed: Value = serde_json::from_str(&range_list(&c, &["--json"])).unwrap();
    assert_eq!(listed["ranges"][0]["voters"], serde_json::json!([1, 2, 3]));
    assert_eq!(listed["ranges"][0]["leader_id"], leader);
    let table = range_list(&c, &[]);
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(
        row.contains("(first key)") && row.contains("(last key)") && row.contains("1,2,3"),
        "{table}"
    );

    c.add_joining_node(4).unwrap();
    range_until(&c, "node 4 a learner of the range", |r| {
        r["learners"] == serde_json::json!([4])
    })
    .await;

    c.kill(leader).unwrap();
    let after = range_until(&c, "a new leader in a later term", |r| {
        r["leader_id"] != leader && r["leader_id"] != 0 && r["term"].as_u64() > Some(term)
    })
    .await;
    assert!(after["voters"].as_array().unwrap().len() == 3, "{after}");
}
