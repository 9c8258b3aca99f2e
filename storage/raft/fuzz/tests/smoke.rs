//! A short, bounded, seeded run of every fuzz target body on stable Rust:
//! random bytes and mutations of valid encodings. It proves the decoders
//! neither panic nor mis-round-trip on these inputs; the real fuzzing runs
//! with cargo-fuzz on nightly. Set STRATA_FUZZ_SEED and STRATA_FUZZ_ITERS
//! to replay or lengthen; a failure prints the seed, iteration and input.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_raft::Message;
use strata_raft::command::{Command, Op, Proposal};
use strata_raft::log::record::{self, RecordKind};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Mutates a valid input: bit flips, truncation, insertion, byte overwrite,
/// a rewritten little-endian length.
fn mutate(rng: &mut SmallRng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..4) {
        match rng.random_range(0..6) {
            0 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => v.truncate(rng.random_range(0..v.len())),
            2 => {
                let i = rng.random_range(0..=v.len());
                v.insert(i, rng.random());
            }
            3 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = rng.random();
            }
            4 if v.len() >= 4 => {
                let i = rng.random_range(0..=v.len() - 4);
                let n: u32 = [0, 1, 255, 1 << 20, u32::MAX][rng.random_range(0..5)];
                v[i..i + 4].copy_from_slice(&n.to_le_bytes());
            }
            _ => v.extend((0..rng.random_range(0..8)).map(|_| rng.random::<u8>())),
        }
    }
    v
}

fn random_bytes(rng: &mut SmallRng) -> Vec<u8> {
    let n = rng.random_range(0..200);
    (0..n).map(|_| rng.random()).collect()
}

fn run(name: &str, seeds: &[Vec<u8>], body: fn(&[u8])) {
    let seed = env_u64("STRATA_FUZZ_SEED", 0x5eed);
    let iters = env_u64("STRATA_FUZZ_ITERS", 300_000);
    let budget = Duration::from_secs(env_u64("STRATA_FUZZ_SECS", 10));
    let mut rng = SmallRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut done = 0;
    for i in 0..iters {
        if start.elapsed() > budget {
            break;
        }
        let input = if i % 4 == 0 || seeds.is_empty() {
            random_bytes(&mut rng)
        } else {
            let pick = rng.random_range(0..seeds.len());
            mutate(&mut rng, &seeds[pick])
        };
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| body(&input))) {
            panic!(
                "{name}: seed {seed} iteration {i} input {:02x?}: {:?}",
                input,
                e.downcast_ref::<String>()
                    .map(String::as_str)
                    .or(e.downcast_ref::<&str>().copied())
            );
        }
        done += 1;
    }
    for s in seeds {
        body(s);
    }
    eprintln!("{name}: {done} inputs, seed {seed}, {:?}", start.elapsed());
}

#[test]
fn record_decode_smoke() {
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
    run("record_decode", &seeds, strata_raft_fuzz::record_decode);
}

#[test]
fn proposal_decode_smoke() {
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
    ];
    let seeds: Vec<Vec<u8>> = commands
        .into_iter()
        .enumerate()
        .map(|(i, command)| {
            Proposal {
                request_id: i as u64 * 977,
                command,
            }
            .encode()
        })
        .collect();
    for s in &seeds {
        assert_eq!(&Proposal::decode(s).expect("seed decodes").encode(), s);
    }
    run("proposal_decode", &seeds, strata_raft_fuzz::proposal_decode);
}

#[test]
fn message_decode_smoke() {
    use raft_proto::eraftpb::{Entry, MessageType};
    let mut m = Message::default();
    m.set_msg_type(MessageType::MsgAppend);
    m.to = 2;
    m.from = 1;
    m.term = 7;
    m.index = 41;
    m.log_term = 6;
    m.commit = 40;
    let mut e = Entry::default();
    e.term = 7;
    e.index = 42;
    e.data = b"payload".to_vec().into();
    m.mut_entries().push(e);
    let mut hb = Message::default();
    hb.set_msg_type(MessageType::MsgHeartbeat);
    hb.to = 3;
    hb.from = 1;
    hb.term = 7;
    let seeds = vec![
        strata_raft::encode_message(&m),
        strata_raft::encode_message(&hb),
    ];
    run("message_decode", &seeds, strata_raft_fuzz::message_decode);
}
