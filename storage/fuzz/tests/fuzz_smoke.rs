//! Every fuzz target's body on stable Rust: its seeds, then seeded random
//! bytes and mutations of the seeds, for a bounded time. It proves the
//! bodies neither panic nor break their round-trip assertions on these
//! inputs; the real fuzzing runs with cargo-fuzz on nightly (`just fuzz`).
//! `STRATA_FUZZ_SECS` (default 3) bounds each target's run,
//! `STRATA_FUZZ_ITERS` (default 300,000) its inputs, and `STRATA_FUZZ_SEED`
//! replays one; a failure prints the target, seed, iteration and input.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use strata_fuzz::{TARGETS, Target};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Bytes that matter to the decoders and parsers: separators, quotes,
/// escapes, protobuf continuation bits.
const INTERESTING: &[u8] = b"%?&=\n\"{}[],:\\/+ \0\xff\x80\x7f\x01";

/// One to four random edits of a valid input: bit flips, byte overwrites
/// (often with an edge value), truncation, insertion, a duplicated chunk, a
/// little-endian u32 (lengths, counts, offsets) set to an edge value, a
/// random tail.
fn mutate(rng: &mut SmallRng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let len = v.len();
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                v[i] = if rng.random_bool(0.5) {
                    INTERESTING[rng.random_range(0..INTERESTING.len())]
                } else {
                    rng.random()
                };
            }
            2 => v.truncate(rng.random_range(0..=len)),
            3 => {
                let at = rng.random_range(0..=len);
                let extra: Vec<u8> = (0..rng.random_range(1..=16))
                    .map(|_| {
                        if rng.random_bool(0.5) {
                            INTERESTING[rng.random_range(0..INTERESTING.len())]
                        } else {
                            rng.random()
                        }
                    })
                    .collect();
                v.splice(at..at, extra);
            }
            4 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = (start + rng.random_range(1..=64)).min(len);
                let chunk = v[start..end].to_vec();
                let at = rng.random_range(0..=len);
                v.splice(at..at, chunk);
            }
            5 if len >= 4 => {
                let i = rng.random_range(0..=len - 4);
                let n: u32 =
                    [0, 1, 255, 1 << 20, 1 << 31, u32::MAX, rng.random()][rng.random_range(0..7)];
                v[i..i + 4].copy_from_slice(&n.to_le_bytes());
            }
            _ => v.extend((0..rng.random_range(0..8)).map(|_| rng.random::<u8>())),
        }
    }
    v
}

fn random_bytes(rng: &mut SmallRng) -> Vec<u8> {
    let n = rng.random_range(0..300);
    (0..n).map(|_| rng.random()).collect()
}

/// Runs `body` on `input`; a panic fails the test naming what was run.
fn check(target: &str, what: &str, input: &[u8], body: fn(&[u8])) {
    if let Err(e) = catch_unwind(AssertUnwindSafe(|| body(input))) {
        panic!(
            "{target}: {what} input {input:02x?} ({:?}): {:?}",
            String::from_utf8_lossy(input),
            e.downcast_ref::<String>()
                .map(String::as_str)
                .or(e.downcast_ref::<&str>().copied())
        );
    }
}

fn smoke(name: &str) {
    let target = Target::named(name).expect("a registered target");
    let seeds = target.seeds();
    assert!(!seeds.is_empty(), "{name}: no seeds");
    for (what, input) in &seeds {
        check(name, what, input, target.body);
    }
    let seed = env_u64("STRATA_FUZZ_SEED", 0x5eed);
    let iters = env_u64("STRATA_FUZZ_ITERS", 300_000);
    let budget = Duration::from_secs(env_u64("STRATA_FUZZ_SECS", 3));
    let mut rng = SmallRng::seed_from_u64(seed);
    let start = Instant::now();
    let mut done = 0;
    for i in 0..iters {
        if start.elapsed() > budget {
            break;
        }
        let input = if i % 4 == 0 {
            random_bytes(&mut rng)
        } else {
            let pick = rng.random_range(0..seeds.len());
            mutate(&mut rng, &seeds[pick].1)
        };
        check(
            name,
            &format!("seed {seed} iteration {i}"),
            &input,
            target.body,
        );
        done += 1;
    }
    eprintln!("{name}: {done} inputs, seed {seed}, {:?}", start.elapsed());
}

/// One test per target, so that the targets run in parallel and each
/// reports on its own.
macro_rules! smoke_tests {
    ($($name:ident),* $(,)?) => {
        const SMOKED: &[&str] = &[$(stringify!($name)),*];
        $(
            mod $name {
                #[test]
                fn survives_its_seeds_and_random_and_mutated_inputs() {
                    super::smoke(stringify!($name));
                }
            }
        )*
    };
}

smoke_tests!(
    block,
    table,
    footer,
    bloom,
    wal,
    manifest_edit,
    manifest_log,
    record_decode,
    proposal_decode,
    message_decode,
    rest_request,
    grpc_request,
    raft_batch,
    backup_read,
);

#[test]
fn every_target_is_smoked_and_has_a_libfuzzer_binary() {
    // Proves the three lists of targets agree: the registry, the smoke
    // tests above, and the libFuzzer binaries in fuzz_targets/ (each also
    // declared in Cargo.toml, which cargo checks).
    let mut registered: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    registered.sort_unstable();
    let mut smoked = SMOKED.to_vec();
    smoked.sort_unstable();
    assert_eq!(smoked, registered, "smoke tests vs registry");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz_targets");
    let mut binaries: Vec<String> = std::fs::read_dir(&dir)
        .expect("fuzz_targets/")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    binaries.sort_unstable();
    assert_eq!(binaries, registered, "fuzz_targets/ vs registry");
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("Cargo.toml");
    for name in registered {
        assert!(
            manifest.contains(&format!("path = \"fuzz_targets/{name}.rs\"")),
            "{name} has no [[bin]] in Cargo.toml"
        );
    }
}
