//! The ranges a cluster reports (`GET /v1/cluster/status` `ranges`,
//! `strata range list`): one range over every key until a split, with its
//! group's voters, learners and leader as they change; and a range split
//! off through the gateway (`strata range split`), served by every node.

use std::time::{Duration, Instant};

use serde_json::Value;
use strata_client::{Client, ScanSelector, WatchSelector};
use strata_harness::Cluster;

async fn status(c: &Cluster) -> Value {
    c.status_json().await
}

/// `strata range list` (with `args`) against the gateway; its output.
fn range_list(c: &Cluster, args: &[&str]) -> String {
    c.strata(&[&["range", "list"], args].concat())
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

/// Waits until the status names `n` ranges, each with three voters and a
/// leader; the ranges.
async fn ranges_led(c: &Cluster, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = status(c).await;
        let ranges = st["ranges"].as_array().cloned().unwrap_or_default();
        let whole = |r: &Value| r["voters"].as_array().is_some_and(|v| v.len() == 3);
        if ranges.len() == n && ranges.iter().all(|r| whole(r) && r["leader_id"] != 0) {
            return ranges;
        }
        assert!(
            Instant::now() < deadline,
            "{n} led ranges within 30 s: {st}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every key under `k/` through `client`, page by page.
async fn every_key(client: &Client) -> Vec<(String, String)> {
    let (mut pairs, mut token) = (Vec::new(), Vec::new());
    loop {
        let page = client
            .scan(ScanSelector::Prefix("k/".into()), 64, token, false)
            .await
            .unwrap();
        pairs.extend(page.kvs.iter().map(|kv| {
            (
                String::from_utf8_lossy(&kv.key).into_owned(),
                String::from_utf8_lossy(&kv.value).into_owned(),
            )
        }));
        if page.next_page_token.is_empty() {
            return pairs;
        }
        token = page.next_page_token;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_range_split_off_is_served_by_every_node_and_outlives_its_leader() {
    // Proves: `strata range split` through the gateway splits the one
    // range in two, each with the three voters and a leader; every node
    // takes writes and linearizable reads of keys on both sides (sending
    // each on to its range's leader); a scan through the gateway returns
    // every key across the split in order; a watch of the new range's keys
    // sees a write to them. After the new range's leader is killed, its
    // keys take writes again through the gateway, and every acknowledged
    // write reads back, from the restarted node too.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let gateway = c.admin_client().await.unwrap();
    let mut want = std::collections::BTreeMap::new();
    for i in 0..200 {
        let (key, value) = (format!("k/{i:03}"), format!("v{i}"));
        gateway.put(key.clone(), value.clone()).await.unwrap();
        want.insert(key, value);
    }

    let out = c.strata(&["range", "split", "k/100", "--json"]);
    let split: Value = serde_json::from_str(&out).unwrap();
    let child = split["ranges"][0]["id"].as_u64().unwrap();
    assert_eq!(split["ranges"][0]["start"], "k/100", "{out}");
    assert!(
        c.strata(&["range", "split", "k/100"])
            .contains("nothing split"),
        "a second split at the same key splits nothing"
    );
    let ranges = ranges_led(&c, 2).await;
    assert_eq!(
        (ranges[0]["end"].clone(), ranges[1]["id"].clone()),
        (Value::from("k/100"), Value::from(child))
    );

    // A watch of the new range's keys, from a write to them on.
    let first = gateway.put("k/199", "watched").await.unwrap();
    want.insert("k/199".into(), "watched".into());
    let mut watch = gateway.watch(
        WatchSelector::Range {
            start: "k/100".into(),
            end: "k/200".into(),
        },
        first.index,
        None,
    );
    for id in c.node_ids() {
        let node = Client::connect(&c.node_url(id))
            .await
            .unwrap()
            .with_token(c.admin_token())
            .unwrap();
        for key in ["k/050", "k/150"] {
            let value = format!("from node {id}");
            node.put(key, value.clone()).await.unwrap();
            assert_eq!(
                node.get(key, false).await.unwrap().as_deref(),
                Some(value.as_bytes()),
                "node {id} reads its own write of {key}"
            );
            want.insert(key.to_string(), value);
        }
    }
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let m = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("a change within 10 s")
            .unwrap();
        seen.extend(m.events.iter().map(|e| {
            (
                String::from_utf8_lossy(&e.key).into_owned(),
                String::from_utf8_lossy(&e.value).into_owned(),
            )
        }));
    }
    let nodes: Vec<_> = c
        .node_ids()
        .iter()
        .map(|id| format!("from node {id}"))
        .collect();
    assert_eq!(
        seen,
        [
            ("k/199".to_string(), "watched".to_string()),
            ("k/150".to_string(), nodes[0].clone()),
            ("k/150".to_string(), nodes[1].clone()),
            ("k/150".to_string(), nodes[2].clone()),
        ]
    );
    assert_eq!(every_key(&gateway).await, Vec::from_iter(want.clone()));

    let leader = ranges_led(&c, 2).await[1]["leader_id"].as_u64().unwrap();
    c.kill(leader).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut written = 0;
    while written < 20 {
        let (key, value) = (format!("k/1{written:02}"), format!("after {written}"));
        match gateway.put(key.clone(), value.clone()).await {
            Ok(_) => {
                want.insert(key, value);
                written += 1;
            }
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no write to the new range in 20 s: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    c.start_node(leader).unwrap();
    ranges_led(&c, 2).await;
    assert_eq!(every_key(&gateway).await, Vec::from_iter(want.clone()));
    let restarted = Client::connect(&c.node_url(leader))
        .await
        .unwrap()
        .with_token(c.admin_token())
        .unwrap();
    for (key, value) in [("k/050", &want["k/050"]), ("k/100", &want["k/100"])] {
        assert_eq!(
            restarted.get(key, false).await.unwrap().as_deref(),
            Some(value.as_bytes()),
            "the restarted node reads {key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_missed_a_split_gets_the_new_range_from_its_leader() {
    // Proves: node 3, down while a range is split and the first range's log
    // is compacted past the split, catches up on the first range from a
    // snapshot (so never applies the split) and still comes to serve the
    // new range: its leader's messages start a replica of it on node 3,
    // which a snapshot fills with the keys written meanwhile (read back on
    // node 3 from its own replica), and node 3's status lists both ranges.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let gateway = c.admin_client().await.unwrap();
    c.kill(3).unwrap();
    let split = gateway.split_range("m").await.unwrap();
    assert!(split.split);
    for i in 0..50 {
        gateway
            .put(format!("z/{i:02}"), format!("v{i}"))
            .await
            .unwrap();
    }
    // Compacts the first range's log past the split on nodes 1 and 2 (a
    // node that stopped answering holds no compaction back once the leader
    // marks it inactive).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let compacted: Value = c
            .http()
            .post(format!("{}/v1/cluster/snapshot", c.gateway_url()))
            .bearer_auth(c.admin_token())
            .json(&serde_json::json!({ "node_ids": [1, 2] }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let past = compacted["nodes"].as_array().is_some_and(|nodes| {
            nodes
                .iter()
                .all(|n| n["first_index_after"].as_u64() > Some(split.index))
        });
        if past {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the logs kept the split: {compacted}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    c.start_node(3).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // A stale read: node 3's own replica answers.
        let read = match Client::connect(&c.node_url(3)).await {
            Ok(node3) => node3
                .with_token(c.admin_token())
                .unwrap()
                .get("z/49", true)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if matches!(&read, Ok(Some(v)) if v.as_ref() == b"v49") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 3 never held z/49: {read:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let own: Value = c
        .http()
        .get(format!("{}/v1/cluster/status", c.node_url(3)))
        .bearer_auth(c.admin_token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let starts: Vec<_> = own["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["start"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(starts, ["", "m"], "{own}");
    assert!(
        c.node_log(3).contains("started an empty replica"),
        "node 3 started the new range from its leader's messages"
    );
}

/// `log` without its terminal colours.
fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            // An escape sequence runs to its final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stopped_hands_over_the_range_split_off_it_leads() {
    // Proves: a node stopped with SIGTERM while it leads the range split
    // off hands that range's leadership to another voter before it exits
    // (its log says so for that group, not only for the first), and the
    // range's keys take writes through the gateway after it stopped.
    let mut c = Cluster::start(3).await.unwrap();
    c.wait_gateway_leader(Duration::from_secs(30))
        .await
        .unwrap();
    let gateway = c.admin_client().await.unwrap();
    let child = gateway.split_range("m").await.unwrap().range.unwrap().id;
    let leader = ranges_led(&c, 2).await[1]["leader_id"].as_u64().unwrap();
    c.stop(leader, Duration::from_secs(20)).await.unwrap();
    let log = plain(&c.node_log(leader));
    assert!(
        log.lines()
            .any(|l| l.contains("shutdown: leadership moved")
                && l.contains(&format!("group={child}"))),
        "node {leader} stopped leading group {child} without handing it over; logs in {}",
        c.log_dir().display()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(e) = gateway.put("z", "after the stop").await {
        assert!(
            Instant::now() < deadline,
            "no write to the new range in 10 s: {e}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
