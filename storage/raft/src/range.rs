//! The keys a raft group serves: a contiguous span of the key space.
//!
//! A group ("range") serves the user keys in `[start, end)`; `end = None`
//! is the end of the key space, so a group whose span was never narrowed
//! serves every key. Every replica stores its group's span with the data
//! (meta key `range_span`), changed only by applied entries (a split), so
//! every replica refuses the same keys at the same index.
//!
//! Stored form: `start_len u32 | start | has_end u8 [| end_len u32 | end]`,
//! lengths little-endian like the commands'.

use std::fmt;

/// `[start, end)` of the user keys a group serves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeySpan {
    pub start: Vec<u8>,
    /// `None`: to the end of the key space.
    pub end: Option<Vec<u8>>,
}

/// A stored span that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("range span: {0}")]
pub struct SpanDecodeError(&'static str);

impl KeySpan {
    /// The whole key space.
    pub fn all() -> Self {
        KeySpan::default()
    }

    /// Whether the span holds `key`.
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| key < end)
    }

    /// Whether every key of `[start, end)` (`end = None`: to the end of the
    /// key space) is in the span.
    pub fn covers(&self, start: &[u8], end: Option<&[u8]>) -> bool {
        if start < self.start.as_slice() {
            return false;
        }
        match (end, self.end.as_deref()) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(e), Some(own)) => e <= own,
        }
    }

    /// `[start, end)` cut to the span: the part of it this group serves
    /// (empty when the two do not meet: then `start >= end`).
    pub fn clamp<'a>(
        &'a self,
        start: &'a [u8],
        end: Option<&'a [u8]>,
    ) -> (&'a [u8], Option<&'a [u8]>) {
        let lo = start.max(self.start.as_slice());
        let hi = match (end, self.end.as_deref()) {
            (None, own) => own,
            (Some(e), None) => Some(e),
            (Some(e), Some(own)) => Some(e.min(own)),
        };
        (lo, hi)
    }

    /// The two spans a split at `at` leaves, `[start, at)` and `[at, end)`;
    /// `None` unless `at` is strictly inside the span (each side must keep
    /// at least the key it starts with).
    pub fn split_at(&self, at: &[u8]) -> Option<(KeySpan, KeySpan)> {
        if at <= self.start.as_slice() || !self.contains(at) {
            return None;
        }
        Some((
            KeySpan {
                start: self.start.clone(),
                end: Some(at.to_vec()),
            },
            KeySpan {
                start: at.to_vec(),
                end: self.end.clone(),
            },
        ))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(9 + self.start.len() + self.end.as_ref().map_or(0, Vec::len));
        out.extend_from_slice(&(self.start.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.start);
        match &self.end {
            None => out.push(0),
            Some(end) => {
                out.push(1);
                out.extend_from_slice(&(end.len() as u32).to_le_bytes());
                out.extend_from_slice(end);
            }
        }
        out
    }

    pub fn decode(buf: &[u8]) -> Result<Self, SpanDecodeError> {
        fn bytes<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8], SpanDecodeError> {
            let len = buf
                .get(..4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
                .ok_or(SpanDecodeError("cut short"))? as usize;
            let body = buf.get(4..4 + len).ok_or(SpanDecodeError("cut short"))?;
            *buf = &buf[4 + len..];
            Ok(body)
        }
        let mut rest = buf;
        let start = bytes(&mut rest)?.to_vec();
        let (flag, mut rest) = rest.split_first().ok_or(SpanDecodeError("cut short"))?;
        let end = match flag {
            0 => None,
            1 => Some(bytes(&mut rest)?.to_vec()),
            _ => return Err(SpanDecodeError("bad end flag")),
        };
        if !rest.is_empty() {
            return Err(SpanDecodeError("trailing bytes"));
        }
        if end.as_ref().is_some_and(|e| *e <= start) {
            return Err(SpanDecodeError("end not after start"));
        }
        Ok(KeySpan { start, end })
    }
}

impl fmt::Display for KeySpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match &self.end {
            Some(end) => write!(f, "[{:?}, {:?})", show(&self.start), show(end)),
            None => write!(f, "[{:?}, end of the key space)", show(&self.start)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: &str, end: Option<&str>) -> KeySpan {
        KeySpan {
            start: start.into(),
            end: end.map(Into::into),
        }
    }

    #[test]
    fn contains_covers_and_clamps_at_the_edges() {
        // Proves: the start is in, the end is out, and a range is covered
        // only if both of its ends are.
        let s = span("b", Some("m"));
        assert!(s.contains(b"b") && s.contains(b"lzz"));
        assert!(!s.contains(b"a") && !s.contains(b"m"));
        assert!(KeySpan::all().contains(b"") && KeySpan::all().contains(&[0xff; 9]));
        assert!(s.covers(b"b", Some(b"m")) && s.covers(b"c", Some(b"d")));
        assert!(!s.covers(b"a", Some(b"c")) && !s.covers(b"c", Some(b"n")));
        assert!(!s.covers(b"c", None));
        assert!(span("b", None).covers(b"c", None));
        assert_eq!(s.clamp(b"a", None), (&b"b"[..], Some(&b"m"[..])));
        assert_eq!(s.clamp(b"c", Some(b"d")), (&b"c"[..], Some(&b"d"[..])));
        let (lo, hi) = s.clamp(b"x", Some(b"z"));
        assert!(hi.is_some_and(|hi| lo >= hi), "disjoint clamps to empty");
    }

    #[test]
    fn a_split_leaves_two_spans_that_meet_at_the_split_key() {
        // Proves: a split at a key strictly inside gives [start, at) and
        // [at, end); at the start or outside there is no split.
        let s = span("b", Some("m"));
        let (left, right) = s.split_at(b"f").unwrap();
        assert_eq!(left, span("b", Some("f")));
        assert_eq!(right, span("f", Some("m")));
        assert!(s.split_at(b"b").is_none());
        assert!(s.split_at(b"m").is_none());
        assert!(s.split_at(b"a").is_none());
        let (l, r) = KeySpan::all().split_at(b"k").unwrap();
        assert_eq!((l, r), (span("", Some("k")), span("k", None)));
        assert!(KeySpan::all().split_at(b"").is_none());
    }

    #[test]
    fn the_stored_form_round_trips_and_damage_is_refused() {
        // Proves: every span decodes to itself; cut, padded or inverted
        // forms are refused.
        for s in [
            KeySpan::all(),
            span("a", None),
            span("", Some("z")),
            span("a\0b", Some("a\0c")),
        ] {
            assert_eq!(KeySpan::decode(&s.encode()).unwrap(), s);
        }
        let good = span("a", Some("b")).encode();
        for cut in 0..good.len() {
            assert!(KeySpan::decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut padded = good.clone();
        padded.push(0);
        assert!(KeySpan::decode(&padded).is_err());
        let inverted = KeySpan {
            start: b"b".to_vec(),
            end: Some(b"a".to_vec()),
        };
        assert!(KeySpan::decode(&inverted.encode()).is_err());
    }
}
