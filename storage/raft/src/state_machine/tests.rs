use super::*;
use strata_engine::Options;

fn committed(index: u64, request_id: u64, command: Command) -> Committed {
    Committed {
        index,
        proposal: Some(Proposal {
            request_id,
            command,
            dedupe: None,
        }),
        conf_state: None,
        members: None,
    }
}

fn put(k: &str, v: &str) -> Command {
    Command::Put {
        key: k.into(),
        value: v.into(),
    }
}

fn open(dir: &std::path::Path) -> StateMachine {
    let sm = StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1);
    sm.check_value_format().unwrap();
    sm
}

#[test]
fn commands_in_one_round_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let sm = open(dir.path());
    let out = sm
        .apply(&[
            committed(1, 10, put("a", "1")),
            committed(
                2,
                11,
                Command::Cas {
                    key: "a".into(),
                    expected: Some("1".into()),
                    value: Some("2".into()),
                },
            ),
            committed(3, 12, Command::Delete { key: "a".into() }),
            Committed {
                index: 4,
                ..Default::default()
            },
        ])
        .unwrap();
    assert_eq!(
        out[1].result,
        ApplyResult::Cas {
            succeeded: true,
            current: Some(b"1".to_vec())
        }
    );
    assert_eq!(out[2].result, ApplyResult::Deleted { existed: true });
    assert_eq!(sm.get(b"a").unwrap(), None);
    assert_eq!(sm.applied_index().unwrap(), 4);
}

#[test]
fn failed_cas_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sm = open(dir.path());
    sm.apply(&[committed(1, 1, put("k", "v"))]).unwrap();
    let out = sm
        .apply(&[committed(
            2,
            2,
            Command::Cas {
                key: "k".into(),
                expected: None,
                value: Some("w".into()),
            },
        )])
        .unwrap();
    assert_eq!(
        out[0].result,
        ApplyResult::Cas {
            succeeded: false,
            current: Some(b"v".to_vec())
        }
    );
    assert_eq!(sm.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn scan_stays_inside_the_group_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), Options::default()).unwrap());
    let g1 = StateMachine::new(engine.clone(), 1);
    let g2 = StateMachine::new(engine, 2);
    g1.apply(&[committed(
        1,
        1,
        Command::Batch(vec![
            Op::Put {
                key: "a".into(),
                value: "1".into(),
            },
            Op::Put {
                key: "b".into(),
                value: "2".into(),
            },
            Op::Put {
                key: "c".into(),
                value: "3".into(),
            },
        ]),
    )])
    .unwrap();
    g2.apply(&[committed(1, 1, put("a", "other"))]).unwrap();
    let got = g1.scan(b"b", None, 10).unwrap();
    assert_eq!(
        got,
        vec![
            (b"b".to_vec(), b"2".to_vec()),
            (b"c".to_vec(), b"3".to_vec())
        ]
    );
    assert_eq!(g1.scan(b"a", Some(b"b"), 10).unwrap().len(), 1);
    assert_eq!(
        g2.scan(b"", None, 10).unwrap(),
        vec![(b"a".to_vec(), b"other".to_vec())]
    );
}

#[test]
fn checkpoint_installs_into_another_replica_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let leader = open(&dir.path().join("leader"));
    leader
        .apply(&[
            committed(1, 1, put("a", "1")),
            committed(2, 2, put("b", "2")),
            Committed {
                index: 3,
                conf_state: Some(b"conf".to_vec()),
                members: Some(b"1=a:1\n".to_vec()),
                ..Default::default()
            },
        ])
        .unwrap();
    let snap = dir.path().join("snap");
    let info = crate::snapshot::seal(&snap, leader.checkpoint(&snap).unwrap()).unwrap();
    assert_eq!(
        info,
        SnapshotInfo {
            index: 3,
            conf_state: b"conf".to_vec(),
            members: b"1=a:1\n".to_vec(),
            keys: 2,
        }
    );
    // Writes after the checkpoint are not in it.
    leader.apply(&[committed(4, 3, put("c", "3"))]).unwrap();

    let follower = open(&dir.path().join("follower"));
    follower
        .apply(&[committed(1, 9, put("stale", "x"))])
        .unwrap();
    let got = follower.install(&snap, 7).unwrap();
    assert_eq!(got, info);
    assert_eq!(
        follower.interrupted_install().unwrap(),
        Some((7, snap.clone()))
    );
    follower.finish_install().unwrap();
    assert_eq!(follower.applied_index().unwrap(), 3);
    assert_eq!(
        follower.scan(b"", None, 10).unwrap(),
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
    assert_eq!(follower.interrupted_install().unwrap(), None);
}

// Proves that remembering recently written keys changes no outcome:
// two replicas, one remembering a few keys (so that its generations
// turn over often) and one remembering none, apply the same random
// puts, deletes, batches, compare-and-sets, leased puts and lease
// revokes, and end every round with the same records, indexes and
// answers.
#[test]
fn remembered_keys_give_the_same_records_as_reading_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let remembering = open(&dir.path().join("a")).with_recent_key_bytes(200);
    let reading = open(&dir.path().join("b")).with_recent_key_bytes(0);
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let key = |i: u64| format!("k{i}").into_bytes();
    let mut index = 1;
    for round in 0..300 {
        let mut entries = Vec::new();
        for _ in 0..1 + next(4) {
            let k = key(next(12));
            let command = match next(7) {
                0 | 1 => Command::Put {
                    key: k,
                    value: format!("v{index}").into_bytes(),
                },
                2 => Command::Delete { key: k },
                3 => Command::Batch(
                    (0..1 + next(6))
                        .map(|_| {
                            let k = key(next(12));
                            if next(3) == 0 {
                                Op::Delete { key: k }
                            } else {
                                Op::Put {
                                    key: k,
                                    value: format!("b{index}").into_bytes(),
                                }
                            }
                        })
                        .collect(),
                ),
                4 => Command::Cas {
                    key: k,
                    expected: None,
                    value: Some(b"new".to_vec()),
                },
                5 => Command::PutWithTtl {
                    key: k,
                    value: b"leased".to_vec(),
                    ttl_ms: 60_000,
                },
                _ => Command::LeaseRevoke { id: 1 + next(4) },
            };
            entries.push(committed(index, index, command));
            index += 1;
        }
        let a = remembering.apply(&entries).unwrap();
        let b = reading.apply(&entries).unwrap();
        assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "answers of round {round}"
        );
        for i in 0..12 {
            assert_eq!(
                remembering.get_versioned(&key(i)).unwrap(),
                reading.get_versioned(&key(i)).unwrap(),
                "key {i} after round {round}"
            );
        }
    }
    assert!(remembering.recent.lock().len() > 0);
}

// Proves that an install makes the replica forget the keys it wrote:
// a put after it takes the create index the snapshot holds for its
// key, not the one the replica had before.
#[test]
fn a_put_after_an_install_takes_the_create_index_of_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let leader = open(&dir.path().join("leader"));
    leader
        .apply(&[
            committed(1, 1, put("other", "x")),
            committed(2, 2, put("k", "from the leader")),
        ])
        .unwrap();
    let snap = dir.path().join("snap");
    crate::snapshot::seal(&snap, leader.checkpoint(&snap).unwrap()).unwrap();

    let follower = open(&dir.path().join("follower"));
    follower
        .apply(&[committed(1, 9, put("k", "stale"))])
        .unwrap();
    assert_eq!(
        follower.get_versioned(b"k").unwrap().unwrap().create_index,
        1
    );
    follower.install(&snap, 7).unwrap();
    follower.finish_install().unwrap();
    follower
        .apply(&[committed(3, 3, put("k", "after"))])
        .unwrap();
    let got = follower.get_versioned(b"k").unwrap().unwrap();
    assert_eq!((got.create_index, got.mod_index), (2, 3));
}

#[test]
fn values_written_without_their_header_are_refused_at_start_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), Options::default()).unwrap());
    // A value as builds before the header wrote it.
    let mut old = WriteBatch::default();
    old.put(&keys::data_key(1, b"k"), b"raw value");
    engine.write(&old).unwrap();
    let sm = StateMachine::new(engine.clone(), 1);
    let err = sm.check_value_format().unwrap_err();
    assert!(matches!(err, ValueFormatError::Unversioned), "{err}");
    assert!(err.to_string().contains("strata snapshot save"), "{err}");
    // A group with no data yet is marked, and stays accepted.
    let empty = StateMachine::new(engine, 2);
    empty.check_value_format().unwrap();
    empty.apply(&[committed(1, 1, put("k", "v"))]).unwrap();
    empty.check_value_format().unwrap();
}
