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
//! or holds keys out of order does not read. [`BackupReader`] reads one
//! from any `Read`, a pair at a time, so a file larger than memory is
//! checked and restored in bounded memory.

use std::io::Read;

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
    #[error("reading the backup: {0}")]
    Io(#[from] std::io::Error),
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

/// Reads a backup from `R` a pair at a time, hashing as it goes; the
/// trailer (count, checksum, nothing after it) is checked when the pairs
/// end. Pairs handed out before an error are not to be trusted.
pub struct BackupReader<R> {
    inner: R,
    hash: Sha256,
    index: u64,
    created_unix_ms: u64,
    held: u64,
    last: Option<Vec<u8>>,
    info: Option<BackupInfo>,
}

impl<R: Read> BackupReader<R> {
    /// Reads and checks the header.
    pub fn new(mut inner: R) -> Result<Self, BackupError> {
        let mut header = [0u8; HEADER_LEN];
        read_exact(&mut inner, &mut header, "in the header").map_err(|e| match e {
            BackupError::CutShort(_) => BackupError::NotABackup,
            other => other,
        })?;
        if &header[..8] != MAGIC {
            return Err(BackupError::NotABackup);
        }
        let version = be_u32(&header[8..12]);
        if version != VERSION {
            return Err(BackupError::Version(version));
        }
        let mut hash = Sha256::new();
        hash.update(header);
        Ok(BackupReader {
            inner,
            hash,
            index: be_u64(&header[12..20]),
            created_unix_ms: be_u64(&header[20..28]),
            held: 0,
            last: None,
            info: None,
        })
    }

    /// The raft index whose state the backup holds.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The next pair, or `None` once the pairs ended and the trailer
    /// checked out (then [`info`](Self::info) says what the backup holds).
    pub fn next_pair(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>, BackupError> {
        if self.info.is_some() {
            return Ok(None);
        }
        let mut lengths = [0u8; 4];
        read_exact(&mut self.inner, &mut lengths, "no end mark")?;
        let key_len = be_u32(&lengths);
        if key_len == END {
            self.finish()?;
            return Ok(None);
        }
        self.hash.update(lengths);
        read_exact(&mut self.inner, &mut lengths, "in a pair's lengths")?;
        self.hash.update(lengths);
        let value_len = be_u32(&lengths);
        let key = read_bytes(&mut self.inner, key_len, "in a key")?;
        let value = read_bytes(&mut self.inner, value_len, "in a value")?;
        if self.last.as_ref().is_some_and(|l| *l >= key) {
            return Err(BackupError::Order(self.held));
        }
        self.hash.update(&key);
        self.hash.update(&value);
        self.last = Some(key.clone());
        self.held += 1;
        Ok(Some((key, value)))
    }

    /// Reads the trailer after the end mark and checks it.
    fn finish(&mut self) -> Result<(), BackupError> {
        let mut trailer = [0u8; 40];
        read_exact(&mut self.inner, &mut trailer, "in the trailer")?;
        let mut more = [0u8; 1];
        if self.inner.read(&mut more)? != 0 {
            return Err(BackupError::Trailing);
        }
        let said = be_u64(&trailer[..8]);
        let sha256: [u8; 32] = trailer[8..40].try_into().unwrap_or_default();
        if std::mem::take(&mut self.hash).finalize().as_slice() != sha256 {
            return Err(BackupError::Checksum);
        }
        if said != self.held {
            return Err(BackupError::Count {
                said,
                held: self.held,
            });
        }
        self.info = Some(BackupInfo {
            index: self.index,
            created_unix_ms: self.created_unix_ms,
            pairs: self.held,
            sha256,
        });
        Ok(())
    }

    /// What the backup holds, once [`next_pair`](Self::next_pair) has
    /// returned `None`.
    pub fn info(&self) -> Option<&BackupInfo> {
        self.info.as_ref()
    }

    /// Reads the rest of the backup, checking it, and says what it holds.
    pub fn check_rest(mut self) -> Result<BackupInfo, BackupError> {
        while self.next_pair()?.is_some() {}
        Ok(self.info.expect("set when the pairs end"))
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().unwrap_or_default())
}

fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().unwrap_or_default())
}

fn read_exact(r: &mut impl Read, buf: &mut [u8], place: &'static str) -> Result<(), BackupError> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => BackupError::CutShort(place),
        _ => BackupError::Io(e),
    })
}

/// `len` bytes, read in growing pieces, so that a damaged length runs into
/// the end of the input instead of allocating what it claims.
fn read_bytes(r: &mut impl Read, len: u32, place: &'static str) -> Result<Vec<u8>, BackupError> {
    let mut out = Vec::with_capacity((len as usize).min(64 << 10));
    let got = r.by_ref().take(u64::from(len)).read_to_end(&mut out)?;
    if got != len as usize {
        return Err(BackupError::CutShort(place));
    }
    Ok(out)
}

/// Reads a whole backup held in memory: its info and its pairs, after
/// checking its header, order, count and checksum.
pub fn read(bytes: &[u8]) -> Result<(BackupInfo, Vec<(Vec<u8>, Vec<u8>)>), BackupError> {
    let mut pairs = Vec::new();
    let info = read_each(bytes, |k, v| pairs.push((k.to_vec(), v.to_vec())))?;
    Ok((info, pairs))
}

/// Reads a backup from `input`, handing each pair to `each` in order, and
/// checks it; the pairs handed over before an error are not to be trusted.
pub fn read_each(
    input: impl Read,
    mut each: impl FnMut(&[u8], &[u8]),
) -> Result<BackupInfo, BackupError> {
    let mut reader = BackupReader::new(input)?;
    while let Some((k, v)) = reader.next_pair()? {
        each(&k, &v);
    }
    Ok(reader.info.expect("set when the pairs end"))
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
        let pairs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_slice()))
            .collect();
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

    /// A backup of `pairs` pairs of 64 KiB values, made as it is read, so
    /// the test never holds it whole either.
    struct Generated {
        pending: Vec<u8>,
        next: u64,
        pairs: u64,
        writer: Option<BackupWriter>,
    }

    impl Read for Generated {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pending.is_empty() {
                if self.next < self.pairs {
                    let w = self.writer.as_mut().expect("writing");
                    let key = format!("k{:08}", self.next);
                    w.pair(key.as_bytes(), &[7u8; 64 << 10], &mut self.pending);
                    self.next += 1;
                } else if let Some(w) = self.writer.take() {
                    self.pending = w.finish();
                }
            }
            let n = buf.len().min(self.pending.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn a_backup_is_read_a_pair_at_a_time_in_bounded_memory() {
        // Proves: checking a 64 MiB backup through a reader never makes an
        // allocation larger than a few pairs, so a backup larger than
        // memory can be checked and restored.
        let (writer, header) = BackupWriter::start(5, 6);
        let input = Generated {
            pending: header,
            next: 0,
            pairs: 1024,
            writer: Some(writer),
        };
        strata_arena::largest_allocation();
        let info = BackupReader::new(std::io::BufReader::new(input))
            .unwrap()
            .check_rest()
            .unwrap();
        let largest = strata_arena::largest_allocation();
        assert_eq!((info.index, info.pairs), (5, 1024));
        assert!(
            largest < 1 << 20,
            "reading made an allocation of {largest} bytes"
        );
    }

    #[test]
    fn a_length_that_claims_more_than_the_input_holds_allocates_nothing_like_it() {
        // Proves: a damaged key length of 4 GiB is "cut short" once the input
        // ends, read a piece at a time, not an allocation of what it claims
        // (which would abort the process).
        let (_, mut b) = BackupWriter::start(1, 1);
        b.extend_from_slice(&(u32::MAX - 1).to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(b"short");
        assert!(matches!(read(&b), Err(BackupError::CutShort("in a key"))));
    }
}
