//! Little-endian fixed-width and LEB128 varint encodings shared by all formats.
//!
//! Decoders return `None` on truncated or malformed input; callers turn that
//! into a `Corruption` error naming the file.

/// Appends `v` as a LEB128 varint.
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends `bytes` prefixed by its length as a varint.
pub(crate) fn put_length_prefixed(buf: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// A cursor over an encoded byte string.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Decoder { rest: bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.rest
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for (i, &b) in self.rest.iter().enumerate().take(10) {
            let shift = 7 * i as u32;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return None;
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                self.rest = &self.rest[i + 1..];
                return Some(v);
            }
        }
        None
    }

    /// A varint that must fit in `usize`.
    pub(crate) fn varint_usize(&mut self) -> Option<usize> {
        self.varint().and_then(|v| usize::try_from(v).ok())
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }

    pub(crate) fn length_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.varint_usize()?;
        self.bytes(n)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.bytes(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }
}

/// Reads a little-endian `u32` at `offset`, if in bounds.
pub(crate) fn read_u32(bytes: &[u8], offset: usize) -> Option<u32> {
    Decoder::new(bytes.get(offset..)?).u32()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that varints round-trip at every width and truncation is detected.
    #[test]
    fn varint_round_trips_and_detects_truncation() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            let mut d = Decoder::new(&buf);
            assert_eq!(d.varint(), Some(v));
            assert!(d.is_empty());
            assert_eq!(Decoder::new(&buf[..buf.len() - 1]).varint(), None);
        }
        assert_eq!(Decoder::new(&[0xff; 11]).varint(), None);
    }
}
