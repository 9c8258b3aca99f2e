//! The reserved keys the canary works on. Every key under [`PREFIX`] is the
//! canary's: clients must not write there (`docs/operations.md` says so).
//! The prefix is readable, so the keys are clearly marked where a scan
//! shows them; a window deletes its keys once it has been checked.

/// The prefix of every canary key.
pub const PREFIX: &str = "__strata_canary/";

/// Key `k` of window `window` of node `node`'s canary: no two windows, nodes
/// or starts of a node (`window` names the start) share a key, so every
/// window begins on registers that were never written.
pub fn key(node: u64, window: &str, k: usize) -> Vec<u8> {
    format!("{PREFIX}{node}/{window}/{k}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_prefix_and_differ_by_node_window_and_number() {
        let a = key(1, "100-0", 0);
        assert!(a.starts_with(PREFIX.as_bytes()));
        assert_ne!(a, key(2, "100-0", 0));
        assert_ne!(a, key(1, "100-1", 0));
        assert_ne!(a, key(1, "100-0", 1));
    }
}
