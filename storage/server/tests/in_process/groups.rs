//! A node hosting more than one raft group: a split applied by its first
//! group makes it start the group split off, which serves its keys, and
//! every start after that starts it again.

use std::time::{Duration, Instant};

use strata_raft::{ApplyResult, Command, PeerHandle};
use strata_server::NodeConfig;
use strata_server::node::Node;

use crate::support::{wait_leader, wait_named};

fn put(key: &str, value: &str) -> Command {
    Command::Put {
        key: key.into(),
        value: value.into(),
    }
}

/// Waits until `node` hosts group `group` and its peer leads it.
async fn led_group(node: &Node, group: u64) -> PeerHandle {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(handle) = node.group(group) {
            let status = handle.status();
            if status.leader_id == status.id {
                return handle;
            }
        }
        assert!(
            Instant::now() < deadline,
            "group {group} did not start and lead in 10 s; the node hosts {:?}",
            node.groups()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_starts_the_group_a_split_gives_keys_to_and_again_at_every_start() {
    // Proves: once its first group applies a split, the node starts the
    // group split off (which elects itself, takes the keys from the split
    // key on and holds those written before), and the first group refuses
    // them; after a clean stop, the next start starts both groups again,
    // the second where it was.
    let dir = tempfile::tempdir().unwrap();
    let config = NodeConfig::single(1, "127.0.0.1:0".parse().unwrap(), dir.path().join("data"));
    let node = Node::start(config.clone()).await.unwrap();
    wait_leader(&node.router()).await;
    wait_named(&node).await;
    assert_eq!(node.groups(), [1]);
    let first = node.raft();
    first.propose(put("q", "before")).await.unwrap();
    let (_, split) = first
        .propose(Command::Split {
            at: "m".into(),
            child: 2,
        })
        .await
        .unwrap();
    assert_eq!(split, ApplyResult::Split { child: 2 });
    let second = led_group(&node, 2).await;
    assert_eq!(node.groups(), [1, 2]);
    assert_eq!(
        second.state_machine().get(b"q").unwrap().as_deref(),
        Some(&b"before"[..])
    );
    let (_, written) = second.propose(put("q", "after")).await.unwrap();
    assert_eq!(written, ApplyResult::Written);
    let (_, refused) = first.propose(put("q", "first")).await.unwrap();
    assert_eq!(refused, ApplyResult::KeyNotInRange { key: "q".into() });

    // A clean stop, then a start on the same directory.
    drop((first, second));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(node.serve(listener, async move {
        let _ = stopped.await;
    }));
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();

    let node = Node::start(config).await.unwrap();
    wait_leader(&node.router()).await;
    let second = led_group(&node, 2).await;
    assert_eq!(node.groups(), [1, 2]);
    assert_eq!(
        second.state_machine().get(b"q").unwrap().as_deref(),
        Some(&b"after"[..])
    );
    let (_, written) = second.propose(put("z", "restarted")).await.unwrap();
    assert_eq!(written, ApplyResult::Written);
}
