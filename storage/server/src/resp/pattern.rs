//! `SCAN ... MATCH pattern`: Redis's glob over keys (`*`, `?`, `[abc]`,
//! `[^a]`, `[a-z]`, `\` escaping the next character), matched with
//! `globset`, where `/` is an ordinary character as in Redis.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use bytes::Bytes;
use globset::{GlobBuilder, GlobMatcher};

#[derive(Debug, thiserror::Error)]
#[error("invalid MATCH pattern: {0}")]
pub struct PatternError(String);

#[derive(Debug)]
pub struct Pattern {
    matcher: GlobMatcher,
    literal_prefix: Bytes,
}

impl Pattern {
    pub fn new(pattern: &[u8]) -> Result<Pattern, PatternError> {
        let text = std::str::from_utf8(pattern)
            .map_err(|_| PatternError("the pattern is not UTF-8".into()))?;
        // Redis negates a class with `^`, globset with `!`; braces are
        // ordinary characters to Redis, alternation to globset.
        let mut glob = String::with_capacity(text.len() + 2);
        let mut escaped = false;
        for c in text.replace("[^", "[!").chars() {
            if matches!(c, '{' | '}') && !escaped {
                glob.push('\\');
            }
            escaped = c == '\\' && !escaped;
            glob.push(c);
        }
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(false)
            .backslash_escape(true)
            .empty_alternates(false)
            .build()
            .map_err(|e| PatternError(e.kind().to_string()))?
            .compile_matcher();
        let special = pattern
            .iter()
            .position(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
            .unwrap_or(pattern.len());
        Ok(Pattern {
            matcher,
            literal_prefix: Bytes::copy_from_slice(&pattern[..special]),
        })
    }

    /// What every matching key starts with: the pattern up to its first
    /// special character.
    pub fn literal_prefix(&self) -> Bytes {
        self.literal_prefix.clone()
    }

    pub fn matches(&self, key: &[u8]) -> bool {
        self.matcher.is_match(OsStr::from_bytes(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_in_redis() {
        // Proves: `*`, `?`, classes, negated classes and escapes match as
        // Redis's SCAN MATCH does, `/` included in `*`.
        let cases: &[(&str, &str, bool)] = &[
            ("user:*", "user:1", true),
            ("user:*", "user:a/b", true),
            ("user:*", "use", false),
            ("h?llo", "hello", true),
            ("h?llo", "heello", false),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-c]llo", "hbllo", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "axb", false),
            ("*", "", true),
            ("a{b,c}", "a{b,c}", true),
            ("a{b,c}", "ab", false),
        ];
        for (pattern, key, want) in cases {
            let p = Pattern::new(pattern.as_bytes()).unwrap();
            assert_eq!(p.matches(key.as_bytes()), *want, "{pattern} ~ {key}");
        }
    }

    #[test]
    fn the_literal_prefix_stops_at_the_first_special_character() {
        // Proves: the prefix that bounds the scan is what every match
        // must start with.
        assert_eq!(
            &Pattern::new(b"user:*").unwrap().literal_prefix()[..],
            b"user:"
        );
        assert_eq!(&Pattern::new(b"a?b*").unwrap().literal_prefix()[..], b"a");
        assert_eq!(&Pattern::new(b"*x").unwrap().literal_prefix()[..], b"");
        assert_eq!(&Pattern::new(b"k\\*").unwrap().literal_prefix()[..], b"k");
        assert_eq!(
            &Pattern::new(b"plain").unwrap().literal_prefix()[..],
            b"plain"
        );
    }

    #[test]
    fn a_broken_pattern_is_refused() {
        // Proves: an unclosed class is an error, not a pattern that
        // matches nothing.
        assert!(Pattern::new(b"a[bc").is_err());
    }
}
