//! Two raft groups on three members that share one engine each: group 1
//! serves every key until a replicated split gives the keys from "m" on to
//! group 2, whose replicas each member starts where it applied the split.
//! The transport routes each message by its group, as the node's does.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use strata_engine::{Engine, Options, WalMode};
use strata_raft::{
    ApplyResult, Command, Message, Peer, PeerConfig, PeerHandle, StateMachine, Transport,
};

/// Every member's handle, by group and member id.
#[derive(Clone, Default)]
struct Network {
    members: Arc<RwLock<HashMap<(u64, u64), PeerHandle>>>,
}

/// The network as one group's members see it.
#[derive(Clone)]
struct GroupNet {
    group: u64,
    net: Network,
}

impl Transport for GroupNet {
    fn send(&self, messages: Vec<Message>) {
        let members = self.net.members.read();
        for m in messages {
            let from = members.get(&(self.group, m.from));
            let to = members.get(&(self.group, m.to));
            if let (Some(from), Some(to)) = (from, to) {
                let stamp = from.stamp_to(m.to);
                to.step(m, stamp);
            }
        }
    }
}

struct Member {
    engine: Arc<Engine>,
    peers: HashMap<u64, Peer>,
}

fn start_peer(
    dir: &std::path::Path,
    net: &Network,
    engine: &Arc<Engine>,
    id: u64,
    group: u64,
    voters: Vec<u64>,
) -> Peer {
    let sm = Arc::new(StateMachine::new(Arc::clone(engine), group));
    let mut config = PeerConfig::new(id, group, voters, dir.join(format!("raft-{id}-{group}")));
    config.tick = Duration::from_millis(5);
    let peer = Peer::start(
        config,
        sm,
        GroupNet {
            group,
            net: net.clone(),
        },
    )
    .expect("peer starts");
    net.members.write().insert((group, id), peer.handle());
    peer
}

async fn leader(members: &[Member], group: u64) -> PeerHandle {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(p) = members
            .iter()
            .filter_map(|m| m.peers.get(&group))
            .find(|p| {
                let s = p.handle().status();
                s.leader_id == s.id
            })
        {
            return p.handle();
        }
        assert!(Instant::now() < deadline, "group {group} elected no leader");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn put(key: &str, value: &str) -> Command {
    Command::Put {
        key: key.into(),
        value: value.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_off_group_elects_its_own_leader_and_serves_its_keys() {
    // Proves, with real peers: after a replicated split each member starts
    // the new group's replica where it applied the split, with nothing
    // copied; the new group elects a leader, is refused nothing of its
    // span and everything outside it, and holds the keys the old group
    // wrote before the split; the old group refuses the keys it gave away
    // and goes on serving its own; and after every member restarts, both
    // groups come back where they were.
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let open = |id: u64| {
        Arc::new(
            Engine::open(
                dir.path().join(format!("engine-{id}")),
                Options {
                    wal: WalMode::NoSync,
                    ..Options::default()
                },
            )
            .expect("engine"),
        )
    };
    let mut members: Vec<Member> = (1..=3)
        .map(|id| {
            let engine = open(id);
            let peer = start_peer(dir.path(), &net, &engine, id, 1, vec![1, 2, 3]);
            Member {
                engine,
                peers: HashMap::from([(1, peer)]),
            }
        })
        .collect();
    let parent = leader(&members, 1).await;
    for c in b'a'..=b'z' {
        let key = (c as char).to_string();
        parent.propose(put(&key, "before")).await.expect("put");
    }
    let (split_index, result) = parent
        .propose(Command::Split {
            at: "m".into(),
            child: 2,
        })
        .await
        .expect("split");
    assert_eq!(result, ApplyResult::Split { child: 2 });

    // Each member starts group 2 once it has applied the split.
    for (id, m) in (1..).zip(members.iter_mut()) {
        let child_state = StateMachine::new(Arc::clone(&m.engine), 2);
        let deadline = Instant::now() + Duration::from_secs(10);
        while child_state.applied_index().unwrap() < split_index {
            assert!(
                Instant::now() < deadline,
                "member {id} did not apply the split"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let peer = start_peer(dir.path(), &net, &m.engine, id, 2, vec![]);
        m.peers.insert(2, peer);
    }
    let child = leader(&members, 2).await;
    let (index, result) = child.propose(put("q", "after")).await.expect("child put");
    assert_eq!(result, ApplyResult::Written);
    assert!(
        index > split_index,
        "{index} after the split at {split_index}"
    );
    let (_, refused) = child.propose(put("c", "after")).await.expect("answered");
    assert_eq!(refused, ApplyResult::KeyNotInRange { key: "c".into() });
    let (_, refused) = parent.propose(put("x", "after")).await.expect("answered");
    assert_eq!(refused, ApplyResult::KeyNotInRange { key: "x".into() });
    let (_, written) = parent.propose(put("c", "after")).await.expect("parent put");
    assert_eq!(written, ApplyResult::Written);

    // Every member's replicas agree, and each group sees only its keys.
    let deadline = Instant::now() + Duration::from_secs(10);
    for m in &members {
        let (p, c) = (&m.peers[&1], &m.peers[&2]);
        while c.handle().state_machine().get(b"q").unwrap().as_deref() != Some(&b"after"[..])
            || p.handle().state_machine().get(b"c").unwrap().as_deref() != Some(&b"after"[..])
        {
            assert!(Instant::now() < deadline, "a member did not catch up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let left = p.handle().state_machine().scan(b"", None, 100).unwrap();
        let right = c.handle().state_machine().scan(b"", None, 100).unwrap();
        assert_eq!((left.len(), right.len()), (12, 14));
        assert_eq!(
            c.handle().state_machine().get(b"z").unwrap().as_deref(),
            Some(&b"before"[..])
        );
    }

    // Restart every member: both groups come back, the child from its own
    // log (started once, at the split).
    net.members.write().clear();
    drop((parent, child));
    drop(members);
    let members: Vec<Member> = (1..=3)
        .map(|id| {
            let engine = open(id);
            let peers = [1, 2]
                .map(|g| (g, start_peer(dir.path(), &net, &engine, id, g, vec![])))
                .into();
            Member { engine, peers }
        })
        .collect();
    let child = leader(&members, 2).await;
    let (_, result) = child
        .propose(put("r", "restarted"))
        .await
        .expect("child put");
    assert_eq!(result, ApplyResult::Written);
    let parent = leader(&members, 1).await;
    let (_, result) = parent
        .propose(put("r", "restarted"))
        .await
        .expect("answered");
    assert_eq!(result, ApplyResult::KeyNotInRange { key: "r".into() });
    assert_eq!(
        child.state_machine().get(b"q").unwrap().as_deref(),
        Some(&b"after"[..])
    );
}
