//! The Kubernetes StatefulSet's own start command
//! (`deploy/k8s/strata-statefulset.yaml`), run as the kubelet runs it in a
//! pod (`/bin/sh -c` with the pod's environment, `HOSTNAME` the pod's name),
//! against a real cluster on loopback: scaling out by one pod, scaling back
//! in as docs/kubernetes.md says, and a first member's pod restarted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_harness::command::CommandLine;
use strata_harness::{Cluster, NodeSlot, workspace_binary};
use yaml_rust2::{Yaml, YamlLoader};

/// Where the image keeps the node binary; the test runs the one it built.
const IMAGE_BINARY: &str = "/usr/local/bin/strata-node";

/// The node container of the StatefulSet: its start script and environment.
struct PodTemplate {
    script: String,
    env: Vec<(String, String)>,
    grace: Duration,
}

fn pod_template() -> PodTemplate {
    let root = std::env::var_os("STRATA_REPO_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let text = std::fs::read_to_string(root.join("deploy/k8s/strata-statefulset.yaml")).unwrap();
    let docs = YamlLoader::load_from_str(&text).unwrap();
    let set = docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("StatefulSet"))
        .expect("a StatefulSet");
    let spec = &set["spec"]["template"]["spec"];
    let container = spec["containers"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str() == Some("node"))
        .expect("the node container");
    let command: Vec<&str> = container["command"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        command,
        ["/bin/sh", "-c"],
        "the test runs the script as sh -c"
    );
    let script = container["args"][0].as_str().unwrap().to_string();
    let env = container["env"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            let value = match &e["value"] {
                Yaml::String(s) => s.clone(),
                // Filled by Kubernetes (the downward API): the pod's name.
                _ => format!(
                    "$fieldRef:{}",
                    e["valueFrom"]["fieldRef"]["fieldPath"].as_str().unwrap()
                ),
            };
            (name, value)
        })
        .collect();
    let grace = Duration::from_secs(spec["terminationGracePeriodSeconds"].as_i64().unwrap() as u64);
    PodTemplate { script, env, grace }
}

impl PodTemplate {
    /// The pod `strata-<ordinal>`'s command, its environment mapped to
    /// loopback: addresses to the slot's, paths to the cluster's files,
    /// `STRATA_PEERS` to `peers` (the first members). A variable the test
    /// does not know fails it, so the manifest cannot outgrow the test.
    fn command(&self, ordinal: u64, slot: &NodeSlot, peers: &str) -> CommandLine {
        assert!(self.script.contains(IMAGE_BINARY), "{}", self.script);
        let node = workspace_binary("strata-node").unwrap();
        let script = self
            .script
            .replace(IMAGE_BINARY, &node.display().to_string());
        let pod = format!("strata-{ordinal}");
        let mut env = BTreeMap::from([("HOSTNAME".to_string(), pod.clone())]);
        for (name, value) in &self.env {
            let local = match name.as_str() {
                "POD_NAME" => {
                    assert_eq!(value, "$fieldRef:metadata.name");
                    pod.clone()
                }
                "STRATA_LISTEN" | "STRATA_ADVERTISE" => slot.listen.clone(),
                "STRATA_RESP_LISTEN" => slot.resp_listen.clone(),
                "STRATA_MEMCACHE_LISTEN" => slot.memcache_listen.clone(),
                "STRATA_PEERS" => peers.to_string(),
                "STRATA_DATA_DIR" => slot.data_dir.display().to_string(),
                "STRATA_AUTH_JWKS" => slot.jwks.display().to_string(),
                "STRATA_NODE_TOKEN_FILE" => slot.node_token.display().to_string(),
                "STRATA_LOG" | "STRATA_ANONYMOUS_ROLE" => value.clone(),
                other => panic!("the StatefulSet sets {other}={value}: map it to loopback here"),
            };
            env.insert(name.clone(), local);
        }
        CommandLine {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script],
            env,
        }
    }
}

async fn members(c: &Cluster) -> Vec<Value> {
    let body: Value = c
        .http()
        .get(format!("{}/v1/cluster/members", c.gateway_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["members"].as_array().unwrap().clone()
}

async fn wait_member(c: &Cluster, id: u64, voter: Option<bool>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let listed = members(c).await;
        let found = listed.iter().find(|m| m["id"] == id);
        match (found, voter) {
            (Some(m), Some(v)) if m["voter"] == v => return,
            (Some(_), None) => return,
            (None, Some(_)) | (Some(_), Some(_)) | (None, None) => {}
        }
        assert!(
            Instant::now() < deadline,
            "node {id} never became {voter:?}: {listed:?}; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statefulsets_pods_scale_out_and_in_as_documented() {
    // Proves, with the manifest's own script and environment: pod strata-3
    // (id 4, not among the first members) joins as a learner by itself
    // with the node token, is promoted and holds the data; removed as
    // docs/kubernetes.md says and then terminated (SIGTERM), it exits 0
    // within the pod's grace period; pod strata-1 restarted keeps id 2 and
    // serves again as a voter. A writer through the gateway runs all along
    // and loses no acknowledged write.
    let pod = pod_template();
    let mut c = Cluster::start_closed(3).await.unwrap();
    let first_members = c.peer_list();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = c.spawn_writer("k8s-", stop.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;

    // kubectl scale statefulset strata --replicas=4
    let slot = c.node_slot(4);
    c.start_node_as(4, &pod.command(3, &slot, &first_members))
        .unwrap();
    wait_member(&c, 4, Some(false), Duration::from_secs(30)).await;
    // The leader lists the learner as soon as it applies the change; the
    // pod logs its own view when the join call's answer reaches it, a
    // moment later.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.node_log(4).contains("added to the cluster as a learner") {
        assert!(Instant::now() < deadline, "{}", c.node_log(4));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // strata member promote 4
    let r = c
        .http()
        .post(format!("{}/v1/cluster/members/4/promote", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    wait_member(&c, 4, Some(true), Duration::from_secs(5)).await;
    c.put_until_ok("k8s-scaled-out", "4", Duration::from_secs(10))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/k8s-scaled-out?consistency=stale",
                c.node_url(4)
            ))
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::OK {
            assert_eq!(r.text().await.unwrap(), "4");
            break;
        }
        assert!(Instant::now() < deadline, "node 4 does not hold the data");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Scale in: strata member remove 4, then kubectl scale --replicas=3,
    // which terminates the pod (SIGTERM, then the grace period).
    let r = c
        .http()
        .delete(format!("{}/v1/cluster/members/4", c.gateway_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
    assert!(!members(&c).await.iter().any(|m| m["id"] == 4));
    let took = c.stop(4, pod.grace).await.unwrap();
    eprintln!("pod strata-3 exited {took:?} after SIGTERM");

    // A first member's pod restarted (strata-1 is node 2) comes back as
    // node 2, a voter, without asking to join.
    c.stop(2, pod.grace).await.unwrap();
    let slot = c.node_slot(2);
    c.start_node_as(2, &pod.command(1, &slot, &first_members))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/k8s-scaled-out?consistency=stale",
                c.node_url(2)
            ))
            .send()
            .await;
        if let Ok(r) = r
            && r.status() == StatusCode::OK
        {
            assert_eq!(
                r.headers()["x-strata-node"],
                "2",
                "the pod came back as another node"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pod strata-1 did not come back as node 2"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A node started with --join logs this once the configuration lists it.
    assert!(
        !c.node_log(2).contains("member of the cluster"),
        "a first member ran --join"
    );
    wait_member(&c, 2, Some(true), Duration::from_secs(5)).await;

    stop.store(true, Ordering::Relaxed);
    let acked = writer.await.unwrap();
    assert!(
        acked.len() > 10,
        "the writer made little progress: {}",
        acked.len()
    );
    for key in &acked {
        let r = c
            .http()
            .get(format!("{}/v1/kv/{key}", c.gateway_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "acknowledged {key} is gone");
    }
    eprintln!("{} acknowledged writes, all read back", acked.len());
}
