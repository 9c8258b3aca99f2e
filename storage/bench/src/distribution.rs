//! Key distributions of YCSB: uniform, zipfian (scrambled, so the hot keys are spread over the key
//! space rather than clustered at its start) and latest (the newest keys are the hottest).

use rand::Rng;

/// Which key a request picks, as an index into `[0, record_count)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DistributionKind {
    Uniform,
    Zipfian,
    Latest,
}

/// Zipfian ranks over `[0, items)` with skew `theta`, after Gray et al., "Quickly generating
/// billion-record synthetic databases" (the generator YCSB uses). Rank 0 is the most popular.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta_n: f64,
    eta: f64,
}

impl Zipfian {
    pub fn new(items: u64, theta: f64) -> Self {
        assert!(items >= 1, "zipfian needs at least one item");
        assert!(
            theta > 0.0 && theta < 1.0,
            "zipfian theta must be in (0, 1)"
        );
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zeta_n = zeta(items);
        let zeta_2 = zeta(2.min(items));
        let eta = if items <= 2 {
            1.0
        } else {
            (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n)
        };
        Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta_n,
            eta,
        }
    }

    /// A rank in `[0, items)`.
    pub fn next_rank(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let rank = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(self.items - 1)
    }
}

/// FNV-1a over the 8 bytes of `x`: YCSB's scrambling hash.
pub fn fnv1a64(x: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in x.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Chooses key indexes. `live` is the number of keys that exist right now (it grows with inserts).
#[derive(Debug, Clone)]
pub struct KeyChooser {
    kind: DistributionKind,
    zipf: Option<Zipfian>,
}

impl KeyChooser {
    /// `records` sizes the zipfian table; keys inserted later are reached by wrapping the rank.
    pub fn new(kind: DistributionKind, records: u64, theta: f64) -> Self {
        let zipf = match kind {
            DistributionKind::Uniform => None,
            DistributionKind::Zipfian | DistributionKind::Latest => {
                Some(Zipfian::new(records.max(1), theta))
            }
        };
        KeyChooser { kind, zipf }
    }

    /// An index in `[0, live)`.
    pub fn next(&self, rng: &mut impl Rng, live: u64) -> u64 {
        assert!(live >= 1, "no keys to choose from");
        match (&self.kind, &self.zipf) {
            (DistributionKind::Uniform, _) => rng.random_range(0..live),
            (DistributionKind::Zipfian, Some(z)) => fnv1a64(z.next_rank(rng)) % live,
            // The newest key (live - 1) is rank 0.
            (DistributionKind::Latest, Some(z)) => live - 1 - (z.next_rank(rng) % live),
            (_, None) => unreachable!("zipfian table built for skewed kinds"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn zipfian_ranks_stay_in_range_and_rank_zero_is_hottest() {
        // Proves the generator never leaves [0, n) and is skewed towards rank 0.
        let z = Zipfian::new(1000, 0.99);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.next_rank(&mut rng) as usize] += 1;
        }
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[900]);
        // With theta 0.99 over 1000 items, rank 0 takes roughly 1/zeta(1000) ≈ 13 %.
        assert!((10_000..16_000).contains(&counts[0]), "{}", counts[0]);
    }

    #[test]
    fn latest_prefers_the_newest_keys() {
        // Proves `latest` picks the most recently inserted index most often.
        let c = KeyChooser::new(DistributionKind::Latest, 100, 0.99);
        let mut rng = SmallRng::seed_from_u64(1);
        let newest = (0..10_000).filter(|_| c.next(&mut rng, 500) == 499).count();
        let old = (0..10_000).filter(|_| c.next(&mut rng, 500) == 100).count();
        assert!(newest > 1000 && old < newest / 10, "{newest} {old}");
    }

    #[test]
    fn every_kind_stays_below_live() {
        // Proves no chooser returns a key that does not exist yet.
        let mut rng = SmallRng::seed_from_u64(3);
        for kind in [
            DistributionKind::Uniform,
            DistributionKind::Zipfian,
            DistributionKind::Latest,
        ] {
            let c = KeyChooser::new(kind, 50, 0.99);
            for live in [1, 2, 49, 50, 51, 500] {
                for _ in 0..1000 {
                    assert!(c.next(&mut rng, live) < live);
                }
            }
        }
    }
}
