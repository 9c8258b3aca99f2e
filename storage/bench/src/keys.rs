//! Key and value bytes: fixed-size keys `<prefix><zero-padded index>` (so byte order equals index
//! order and scans walk neighbouring records) and values sliced from one random pool.

use bytes::Bytes;
use rand::Rng;

#[derive(Debug, Clone)]
pub struct KeySpace {
    prefix: String,
    key_size_bytes: usize,
}

impl KeySpace {
    pub fn new(prefix: &str, key_size_bytes: usize) -> Self {
        assert!(
            prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "key prefix must be URL-safe ASCII"
        );
        KeySpace {
            prefix: prefix.to_string(),
            key_size_bytes,
        }
    }

    /// The key of record `index`; longer than `key_size_bytes` only when the index needs more digits.
    pub fn key(&self, index: u64) -> Bytes {
        let width = self.key_size_bytes.saturating_sub(self.prefix.len());
        Bytes::from(format!("{}{:0width$}", self.prefix, index, width = width))
    }

    /// How many records fit in the configured key size.
    pub fn capacity(&self) -> u64 {
        let digits = self.key_size_bytes.saturating_sub(self.prefix.len()) as u32;
        10u64.saturating_pow(digits)
    }

    /// The exclusive end of the whole key space (the prefix with its last byte incremented).
    pub fn end(&self) -> Bytes {
        let mut end = self.prefix.clone().into_bytes();
        match end.last_mut() {
            Some(last) => *last += 1,
            // No prefix: every key is digits, and ':' sorts after '9'.
            None => end.push(b':'),
        }
        Bytes::from(end)
    }
}

/// Values of one size, cut from a shared random (alphanumeric, so REST bodies stay readable) pool.
#[derive(Debug, Clone)]
pub struct ValuePool {
    pool: Bytes,
    size_bytes: usize,
}

impl ValuePool {
    pub fn new(size_bytes: usize, rng: &mut impl Rng) -> Self {
        let len = (size_bytes * 4).max(64 * 1024);
        let pool: Vec<u8> = (0..len)
            .map(|_| rng.sample(rand::distr::Alphanumeric))
            .collect();
        ValuePool {
            pool: Bytes::from(pool),
            size_bytes,
        }
    }

    pub fn next(&self, rng: &mut impl Rng) -> Bytes {
        let start = rng.random_range(0..=self.pool.len() - self.size_bytes);
        self.pool.slice(start..start + self.size_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_configured_size_and_sort_by_index() {
        // Proves keys are fixed-width, so byte order matches record order.
        let ks = KeySpace::new("k", 8);
        assert_eq!(ks.key(42).as_ref(), b"k0000042");
        assert!(ks.key(9) < ks.key(10));
        assert_eq!(ks.capacity(), 10_000_000);
        assert!(ks.key(9_999_999) < ks.end());
    }
}
