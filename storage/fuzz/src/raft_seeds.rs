//! Valid encodings the raft targets' mutations start from, built with
//! strata-raft's own encoders.

use raft_proto::eraftpb::{Entry, MessageType};
use strata_raft::Message;
use strata_raft::command::{Command, Op, Proposal};
use strata_raft::log::record::{self, RecordKind};
use strata_raft::{Compare, CompareOp, CompareTarget, Txn, TxnOp};

/// Single records of every kind, and each followed by a second record.
pub fn record_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (kind, payload) in [
        (RecordKind::Entries, &b"entries"[..]),
        (RecordKind::HardState, b""),
        (RecordKind::ConfState, &[0u8; 40][..]),
    ] {
        let mut one = Vec::new();
        record::encode(kind, payload, &mut one);
        seeds.push(one.clone());
        record::encode(RecordKind::Entries, b"second", &mut one);
        seeds.push(one);
    }
    seeds
}

/// One proposal of every command kind.
pub fn proposal_seeds() -> Vec<Vec<u8>> {
    let commands = [
        Command::Put {
            key: b"k".to_vec(),
            value: b"value".to_vec(),
        },
        Command::Delete {
            key: b"key".to_vec(),
        },
        Command::Batch(vec![
            Op::Put {
                key: b"a".to_vec(),
                value: b"1".to_vec(),
            },
            Op::Delete { key: b"b".to_vec() },
        ]),
        Command::Cas {
            key: b"k".to_vec(),
            expected: Some(b"old".to_vec()),
            value: None,
        },
        Command::Cas {
            key: b"k".to_vec(),
            expected: None,
            value: Some(b"new".to_vec()),
        },
        Command::Txn(Txn {
            compares: vec![
                Compare {
                    key: b"a".to_vec(),
                    target: CompareTarget::ModIndex(CompareOp::Equal, 3),
                },
                Compare {
                    key: b"b".to_vec(),
                    target: CompareTarget::Value(CompareOp::Greater, b"5".to_vec()),
                },
                Compare {
                    key: b"c".to_vec(),
                    target: CompareTarget::Exists(false),
                },
            ],
            success: vec![
                TxnOp::Put {
                    key: b"a".to_vec(),
                    value: b"1".to_vec(),
                    lease: 0,
                },
                TxnOp::Delete { key: b"b".to_vec() },
                TxnOp::Range {
                    start: b"a".to_vec(),
                    end: b"b".to_vec(),
                    limit: 2,
                },
            ],
            failure: vec![TxnOp::Get { key: b"a".to_vec() }],
        }),
        Command::LeaseGrant {
            id: 7,
            ttl_ms: 30_000,
        },
        Command::PutLeased {
            key: b"k".to_vec(),
            value: b"v".to_vec(),
            lease: 7,
        },
        Command::PutWithTtl {
            key: b"session".to_vec(),
            value: b"s".to_vec(),
            ttl_ms: 5_000,
        },
        Command::LeaseRevoke { id: 7 },
    ];
    let plain: Vec<Vec<u8>> = commands
        .into_iter()
        .enumerate()
        .map(|(i, command)| {
            Proposal {
                request_id: i as u64 * 977,
                command,
                dedupe: None,
            }
            .encode()
        })
        .collect();
    // The same, as a sampled request carries them: version 2, with a trace
    // context (trace id, span id, flags) after the request id.
    let traced: Vec<Vec<u8>> = plain
        .iter()
        .map(|p| {
            let mut t = p.clone();
            t[0] = 2;
            t.splice(9..9, [7u8; 24].into_iter().chain([1]));
            t
        })
        .collect();
    plain.into_iter().chain(traced).collect()
}

/// An append carrying one entry, and a heartbeat.
pub fn message_seeds() -> Vec<Vec<u8>> {
    let mut m = Message::default();
    m.set_msg_type(MessageType::MsgAppend);
    m.to = 2;
    m.from = 1;
    m.term = 7;
    m.index = 41;
    m.log_term = 6;
    m.commit = 40;
    let mut e = Entry::default();
    e.set_term(7);
    e.set_index(42);
    e.set_data(b"payload".to_vec().into());
    m.mut_entries().push(e);
    let mut hb = Message::default();
    hb.set_msg_type(MessageType::MsgHeartbeat);
    hb.to = 3;
    hb.from = 1;
    hb.term = 7;
    vec![
        strata_raft::encode_message(&m),
        strata_raft::encode_message(&hb),
    ]
}
