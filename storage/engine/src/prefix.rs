//! The key range a prefix covers, shared by the engine's prefix scans and
//! the layers above that turn a prefix into a range.

/// The smallest key greater than every key that starts with `prefix`, or
/// `None` when no such key exists (the prefix is empty or all `0xff`): the
/// exclusive end of the range `[prefix, end)`.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that the prefix end bound excludes exactly the keys without
    // the prefix: trailing 0xff bytes carry over, and an all-0xff or empty
    // prefix has no end.
    #[test]
    fn prefix_end_skips_trailing_ff() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
