//! A short, bounded, deterministic fuzz run of every on-disk decoder, on
//! stable Rust: the bodies of the cargo-fuzz targets in `engine/fuzz` fed
//! with seeded random bytes and with mutations of valid encodings. Any
//! panic fails the test and prints the target, seed and input.
//! `STRATA_FUZZ_ITERS` (default 3000 per target) sets the length.

use std::panic::{AssertUnwindSafe, catch_unwind};

use strata_engine::fuzzing::{Target, seed_corpus};

/// splitmix64: small, seedable, good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// One to four random edits: bit flips, byte overwrites (often with 0,
/// 0xff or a small length), truncation, insertion, duplication.
fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(6) {
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = [0, 0xff, 1, 0x7f, rng.next() as u8][rng.below(5)];
            }
            2 => data.truncate(rng.below(len + 1)),
            3 => {
                let i = rng.below(len + 1);
                let n = 1 + rng.below(16);
                let extra = rng.bytes(n);
                data.splice(i..i, extra);
            }
            4 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(64)).min(len);
                let chunk = data[start..end].to_vec();
                let at = rng.below(len + 1);
                data.splice(at..at, chunk);
            }
            _ if len >= 4 => {
                // Overwrite a u32 (lengths, counts, offsets) with an edge value.
                let i = rng.below(len - 3);
                let v: u32 = [0, 1, u32::MAX, 1 << 31, rng.next() as u32][rng.below(5)];
                data[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => data.push(rng.next() as u8),
        }
    }
    data
}

fn iterations() -> usize {
    std::env::var("STRATA_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

// Proves that no decoder panics on random bytes or on mutations of valid
// encodings, and that every valid seed decodes without panicking.
#[test]
fn decoders_survive_random_and_mutated_inputs() {
    let corpus = seed_corpus();
    for target in Target::ALL {
        assert!(
            corpus.iter().any(|(t, _)| *t == target),
            "{target:?} has no seed"
        );
    }
    let iters = iterations();
    for (n, target) in Target::ALL.into_iter().enumerate() {
        let seeds: Vec<&Vec<u8>> = corpus
            .iter()
            .filter(|(t, _)| *t == target)
            .map(|(_, d)| d)
            .collect();
        let seed = 0x5eed_0000 + n as u64;
        let mut rng = Rng(seed);
        for i in 0..iters {
            let input = if i % 4 == 0 {
                let len = rng.below(300);
                rng.bytes(len)
            } else {
                let base = seeds[rng.below(seeds.len())];
                if i % 50 == 1 {
                    base.clone()
                } else {
                    mutate(&mut rng, base)
                }
            };
            let outcome = catch_unwind(AssertUnwindSafe(|| target.run(&input)));
            assert!(
                outcome.is_ok(),
                "{target:?} panicked (seed {seed:#x}, iteration {i}) on input {input:02x?}"
            );
        }
    }
}
