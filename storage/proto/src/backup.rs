//! The backup format, written by the nodes (`KV/Backup`, `GET /v1/backup`)
//! and read by `strata snapshot status|restore`: the whole key space as of
//! one raft index, checked end to end.
//!
//! ```text
//! magic "STRATABK" | version u32 (=1) | index u64 | created_unix_ms u64
//! pair*: key_len u32 | value_len u32 | key | value      (keys ascending)
//! end:   u32::MAX | pairs u64 | sha256 (32 bytes) of every byte before `end`
//! ```
//! Integers are big-endian. A file that is cut short, has bytes changed,
//! or holds keys out of order does not read.

use sha2::{Digest, Sha256};

pub const MAGIC: &[u8; 8] = b"STRATABK";
pub const VERSION: u32 = 1;
/// The key length that marks the end of the pairs.
const END: u32 = u32::MAX;
const HEADER_LEN: usize = 8 + 4 + 8 + 8;

/// What a backup's header and trailer say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// The raft index whose state it holds.
    pub index: u64,
    pub created_unix_ms: u64,
    pub pairs: u64,
    /// SHA-256 of everything before the trailer's end mark.
    pub sha256: [u8; 32],
}

impl BackupInfo {
    pub fn sha256_hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("not a Strata backup (no STRATABK header)")]
    NotABackup,
    #[error("backup format version {0}; this build reads version {VERSION}")]
    Version(u32),
    #[error("the backup is cut short: {0}")]
    CutShort(&'static str),
    #[error("the backup's checksum does not match its contents: it was changed or damaged")]
    Checksum,
    #[error("the backup says it holds {said} pairs but holds {held}")]
    Count { said: u64, held: u64 },
    #[error("the backup's keys are out of order at pair {0}")]
    Order(u64),
    #[error("bytes after the backup's end")]
    Trailing,
}

/// Writes a backup in pieces, hashing as it goes.
pub struct BackupWriter {
    hash: Sha256,
    pairs: u64,
}

impl BackupWriter {
    /// The writer, and the header for the state at raft `index`.
    pub fn start(index: u64, created_unix_ms: u64) -> (BackupWriter, Vec<u8>) {
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_be_bytes());
        header.extend_from_slice(&index.to_be_bytes());
        header.extend_from_slice(&created_unix_ms.to_be_bytes());
        let mut hash = Sha256::new();
        hash.update(&header);
        (BackupWriter { hash, pairs: 0 }, header)
    }

    /// Appends one pair (keys must come in ascending order) to `out`.
    pub fn pair(&mut self, key: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let from = out.len();
        out.extend_from_slice(&(key.len() as u32).to_be_bytes());
        out.extend_from_slice(&(value.len() as u32).to_be_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(value);
        self.hash.update(&out[from..]);
        self.pairs += 1;
    }

    /// The trailer.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(44);
        out.extend_from_slice(&END.to_be_bytes());
        out.extend_from_slice(&self.pairs.to_be_bytes());
        out.extend_from_slice(&self.hash.finalize());
        out
    }
}

/// Reads a whole backup held in memory: its info and its pairs, after
/// checking its header, order, count and checksum.
pub fn read(bytes: &[u8]) -> Result<(BackupInfo, Vec<(&[u8], &[u8])>), BackupError> {
    let mut pairs = Vec::new();
    let info = read_each(bytes, |k, v| pairs.push((k, v)))?;
    Ok((info, pairs))
}

/// Reads a backup, handing each pair to `each` in order, and checks it; the
/// pairs handed over before an error are not to be trusted.
pub fn read_each<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(&'a [u8], &'a [u8]),
) -> Result<BackupInfo, BackupError> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(BackupError::NotABackup);
    }
    let be_u32 = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap_or_default());
    let be_u64 = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
    let version = be_u32(&bytes[8..12]);
    if version != VERSION {
        return Err(BackupError::Version(version));
    }
    let index = be_u64(&bytes[12..20]);
    let created_unix_ms = be_u64(&bytes[20..28]);
    let mut at = HEADER_LEN;
    let mut held = 0u64;
    let mut last: Option<&[u8]> = None;
    loop {
        let head = bytes
            .get(at..at + 4)
            .ok_or(BackupError::CutShort("no end mark"))?;
        let key_len = be_u32(head);
        if key_len == END {
            break;
        }
        let value_len = be_u32(
            bytes
                .get(at + 4..at + 8)
                .ok_or(BackupError::CutShort("in a pair's lengths"))?,
        ) as usize;
        let key_at = at + 8;
        let value_at = key_at + key_len as usize;
        let end = value_at + value_len;
        let key = bytes
            .get(key_at..value_at)
            .ok_or(BackupError::CutShort("in a key"))?;
        let value = bytes
            .get(value_at..end)
            .ok_or(BackupError::CutShort("in a value"))?;
        if last.is_some_and(|l| l >= key) {
            return Err(BackupError::Order(held));
        }
        last = Some(key);
        each(key, value);
        held += 1;
        at = end;
    }
    let trailer = bytes
        .get(at..at + 44)
        .ok_or(BackupError::CutShort("in the trailer"))?;
    if bytes.len() > at + 44 {
        return Err(BackupError::Trailing);
    }
    let said = be_u64(&trailer[4..12]);
    let sha256: [u8; 32] = trailer[12..44].try_into().unwrap_or_default();
    if Sha256::digest(&bytes[..at]).as_slice() != sha256 {
        return Err(BackupError::Checksum);
    }
    if said != held {
        return Err(BackupError::Count { said, held });
    }
    Ok(BackupInfo {
        index,
        created_unix_ms,
        pairs: held,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup(pairs: &[(&str, &str)]) -> Vec<u8> {
        let (mut w, mut out) = BackupWriter::start(42, 7);
        for (k, v) in pairs {
            w.pair(k.as_bytes(), v.as_bytes(), &mut out);
        }
        out.extend(w.finish());
        out
    }

    #[test]
    fn a_backup_reads_back_with_its_index_and_pairs() {
        let b = backup(&[("a", "1"), ("b", ""), ("c", "three")]);
        let (info, pairs) = read(&b).unwrap();
        assert_eq!((info.index, info.created_unix_ms, info.pairs), (42, 7, 3));
        assert_eq!(
            pairs,
            vec![
                (&b"a"[..], &b"1"[..]),
                (&b"b"[..], &b""[..]),
                (&b"c"[..], &b"three"[..])
            ]
        );
        assert_eq!(info.sha256_hex().len(), 64);
        let nothing = backup(&[]);
        let (empty, none) = read(&nothing).unwrap();
        assert_eq!((empty.pairs, none.len()), (0, 0));
    }

    #[test]
    fn a_damaged_cut_or_disordered_backup_does_not_read() {
        // Proves: every changed byte, every cut, a swapped pair order and
        // extra bytes are refused, each with its reason.
        let b = backup(&[("a", "1"), ("b", "2")]);
        for i in 0..b.len() {
            let mut damaged = b.clone();
            damaged[i] ^= 0x40;
            assert!(read(&damaged).is_err(), "byte {i} changed and still read");
        }
        for cut in 0..b.len() {
            assert!(read(&b[..cut]).is_err(), "cut at {cut} still read");
        }
        assert!(matches!(
            read(&backup(&[("b", "2"), ("a", "1")])),
            Err(BackupError::Order(1))
        ));
        let mut longer = b.clone();
        longer.push(0);
        assert!(matches!(read(&longer), Err(BackupError::Trailing)));
        assert!(matches!(read(b"hello"), Err(BackupError::NotABackup)));
    }
}
