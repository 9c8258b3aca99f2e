//! Leaders spread across the nodes: the first range's leader moves range
//! leaderships away from a node that leads more than its share.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use strata_harness::Cluster;

const SPLITS: [&str; 5] = ["b", "d", "f", "h", "j"];

async fn ranges(c: &Cluster) -> Vec<Value> {
    c.status_json().await["ranges"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// How many ranges each node leads; `None` while some range names no
/// leader.
fn leaders_per_node(ranges: &[Value]) -> Option<BTreeMap<u64, usize>> {
    let mut count = BTreeMap::new();
    for r in ranges {
        let leader = r["leader_id"].as_u64().filter(|&l| l != 0)?;
        *count.entry(leader).or_insert(0) += 1;
    }
    Some(count)
}

/// The `event: range` events of one event stream through the gateway,
/// gathered in the background from now on.
async fn range_events(c: &Cluster) -> Arc<Mutex<Vec<Value>>> {
    let resp = reqwest::get(format!("{}/v1/cluster/events", c.gateway_url()))
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    tokio::spawn(async move {
        let mut events = resp.bytes_stream().eventsource();
        while let Some(Ok(e)) = events.next().await {
            if e.event == "range" {
                into.lock()
                    .unwrap()
                    .push(serde_json::from_str(&e.data).unwrap());
            }
        }
    });
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaders_piled_on_one_node_are_spread_across_the_nodes() {
    // Proves: six ranges whose leaderships were all moved to node 1
    // (`strata leader transfer --range`) end up led two by each of the
    // three nodes, by the balancer alone, and every range still takes
    // writes. With `--balance-every-ms 0` the leaders stay on node 1 and
    // the test fails.
    let c = Cluster::start_with_args(3, &["--balance-every-ms", "2000"])
        .await
        .unwrap();
    c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let events = range_events(&c).await;
    for key in SPLITS {
        c.strata(&["range", "split", key]);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let ids: Vec<u64> = loop {
        let rs = ranges(&c).await;
        if rs.len() == SPLITS.len() + 1 && leaders_per_node(&rs).is_some() {
            break rs.iter().map(|r| r["id"].as_u64().unwrap()).collect();
        }
        assert!(Instant::now() < deadline, "six led ranges within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // Pile every leadership on node 1, as a restart or a run of
    // elections can.
    for id in &ids {
        let out = c.strata(&["leader", "transfer", "1", "--range", &id.to_string()]);
        assert!(out.contains("leader is now node 1"), "range {id}: {out}");
    }
    let piled = leaders_per_node(&ranges(&c).await);
    eprintln!("leaders per node after piling them on node 1: {piled:?}");

    let deadline = Instant::now() + Duration::from_secs(40);
    let balanced = loop {
        let rs = ranges(&c).await;
        if let Some(count) = leaders_per_node(&rs)
            && count.len() == 3
            && count.values().all(|&n| n == 2)
        {
            break count;
        }
        assert!(
            Instant::now() < deadline,
            "leaders not spread within 40 s: {:?} (piled: {piled:?}); logs in {}",
            leaders_per_node(&rs),
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!("leaders per node, balanced: {balanced:?}");
    let moves: usize = c
        .node_ids()
        .iter()
        .map(|&id| {
            c.node_log(id)
                .matches("moved a range's leadership to even out")
                .count()
        })
        .sum();
    assert!(
        moves >= 4,
        "{moves} moves logged for six ranges piled on one node"
    );

    // The event stream told of each split and of the moves as they
    // happened.
    let seen = events.lock().unwrap().clone();
    let split_at: Vec<&str> = seen
        .iter()
        .filter(|e| e["kind"] == "split")
        .map(|e| e["start"].as_str().unwrap())
        .collect();
    assert_eq!(split_at, SPLITS, "{seen:?}");
    let to_one = seen
        .iter()
        .filter(|e| e["kind"] == "leader_changed" && e["leader_id"] == 1)
        .count();
    let away = seen
        .iter()
        .filter(|e| e["kind"] == "leader_changed" && e["leader_id"] != 1)
        .count();
    assert!(
        to_one >= SPLITS.len() && away >= 4,
        "{to_one} range leaderships to node 1 and {away} away from it: {seen:?}"
    );

    // Every range takes a write and answers it.
    let client = c.admin_client().await.unwrap();
    for key in ["a", "c", "e", "g", "i", "k"] {
        client.put(key, "after the moves").await.unwrap();
        let got = client.get(key, false).await.unwrap();
        assert_eq!(got.as_deref(), Some(&b"after the moves"[..]), "{key}");
    }
}
