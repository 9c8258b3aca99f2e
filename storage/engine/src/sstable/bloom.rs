//! Bloom filter over the user keys of a table.
//!
//! Layout: `bits[ceil(m / 8)] | k: u8`. Probes use double hashing of a
//! 64-bit key hash ([`key_hash`], part of the on-disk format): probe `i`
//! tests bit `(h + i * delta) mod m`, with `delta = h.rotate_right(17)`.

/// Largest number of probes a reader accepts; larger values are reserved and
/// read as "may contain" so old readers stay correct.
const MAX_PROBES: u8 = 30;

/// Stable 64-bit hash of a key. Changing it changes the file format.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    const P1: u64 = 0x9E37_79B9_7F4A_7C15;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    let mut h = P2 ^ (key.len() as u64).wrapping_mul(P1);
    for chunk in key.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(P1)
            .rotate_left(29)
            .wrapping_mul(P2);
    }
    // splitmix64 finaliser: spreads entropy into every bit.
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// Builds a filter for keys with the given hashes.
pub(crate) fn build_filter(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    let bits = (hashes.len() * bits_per_key as usize).max(64);
    let bytes = bits.div_ceil(8);
    let bits = bytes * 8;
    // k = ln 2 * bits_per_key minimises the false-positive rate.
    let k = ((f64::from(bits_per_key) * 0.69).round() as u8).clamp(1, MAX_PROBES);
    let mut filter = vec![0u8; bytes + 1];
    for &h in hashes {
        let delta = h.rotate_right(17);
        let mut probe = h;
        for _ in 0..k {
            let bit = (probe % bits as u64) as usize;
            filter[bit / 8] |= 1 << (bit % 8);
            probe = probe.wrapping_add(delta);
        }
    }
    filter[bytes] = k;
    filter
}

/// Whether a key with hash `h` may be in the set; never false for a member.
pub(crate) fn may_contain(filter: &[u8], h: u64) -> bool {
    let Some((&k, bits)) = filter.split_last() else {
        return true;
    };
    if bits.is_empty() || k == 0 || k > MAX_PROBES {
        return true;
    }
    let nbits = (bits.len() * 8) as u64;
    let delta = h.rotate_right(17);
    let mut probe = h;
    for _ in 0..k {
        let bit = (probe % nbits) as usize;
        if bits[bit / 8] & (1 << (bit % 8)) == 0 {
            return false;
        }
        probe = probe.wrapping_add(delta);
    }
    true
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    // Proves that the false-positive rate at 10 bits per key is near the
    // theoretical 1%, so the filter is actually filtering.
    #[test]
    fn false_positive_rate_is_low_at_ten_bits_per_key() {
        let hashes: Vec<u64> = (0..10_000u32).map(|i| key_hash(&i.to_le_bytes())).collect();
        let filter = build_filter(&hashes, 10);
        let false_positives = (10_000..110_000u32)
            .filter(|i| may_contain(&filter, key_hash(&i.to_le_bytes())))
            .count();
        assert!(
            false_positives < 2_000,
            "false positive rate too high: {false_positives} / 100000"
        );
    }

    // Proves that malformed or empty filters degrade to "may contain".
    #[test]
    fn malformed_filter_may_contain_everything() {
        assert!(may_contain(&[], 7));
        assert!(may_contain(&[0, 0, 0, 99], 7));
    }

    proptest! {
        // Proves the core promise: no false negatives, for any key set.
        #[test]
        fn bloom_has_no_false_negatives(keys in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..24), 0..300), bits in 1u32..20) {
            let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k)).collect();
            let filter = build_filter(&hashes, bits);
            for k in &keys {
                prop_assert!(may_contain(&filter, key_hash(k)));
            }
        }
    }
}
