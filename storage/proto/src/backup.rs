//! The backup format, written by the nodes (`KV/Backup`, `GET /v1/backup`)
//! and read by `strata snapshot status|restore` and `strata-node restore`:
//! the whole key space as of one raft index, with each key's create and
//! mod index and lease, and the leases themselves, checked end to end.
//!
//! ```text
//! header: magic "STRATABK" | version u32 (=2) | index u64 | created_unix_ms u64
//!         | cluster_id u64
//! lease*: 'L' | id u64 | ttl_ms u64                           (ids ascending)
//! pair*:  'P' | key_len u32 | value_len u32 | create_index u64 | mod_index u64
//!         | lease u64 | key | value                         (keys ascending)
//! end:    'E' | leases u64 | pairs u64 | sha256 (32 bytes) of every byte
//!         before the sha256
//! ```
//! Integers are big-endian; every lease comes before the first pair. A
//! file that is cut short, has bytes changed, or holds items out of order
//! does not read. Version 1 (the pairs alone: `key_len u32 | value_len u32
//! | key | value`, ended by `u32::MAX | pairs u64 | sha256` of every byte
//! before the end mark) still reads: its keys carry the backup's index as
//! both their indexes, and no lease. [`BackupReader`] reads either from
//! any `Read`, an item at a time, so a file larger than memory is checked
//! and restored in bounded memory.

use std::io::Read;

use sha2::{Digest, Sha256};

pub const MAGIC: &[u8; 8] = b"STRATABK";
/// The version this build writes.
pub const VERSION: u32 = 2;
/// The first version, which this build still reads.
const VERSION_PAIRS_ONLY: u32 = 1;
/// Version 1's key length that marks the end of the pairs.
const V1_END: u32 = u32::MAX;
const V1_HEADER_LEN: usize = 8 + 4 + 8 + 8;
const HEADER_LEN: usize = V1_HEADER_LEN + 8;
const TAG_LEASE: u8 = b'L';
const TAG_PAIR: u8 = b'P';
const TAG_END: u8 = b'E';

/// What a backup's header and trailer say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    pub version: u32,
    /// The raft index whose state it holds.
    pub index: u64,
    pub created_unix_ms: u64,
    /// The cluster it was taken from (0: not named, or a version 1 file).
    pub cluster_id: u64,
    pub leases: u64,
    pub pairs: u64,
    /// SHA-256 of everything before it.
    pub sha256: [u8; 32],
}

impl BackupInfo {
    pub fn sha256_hex(&self) -> String {
        self.sha256.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// One key as a backup holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupPair {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// The raft index that created the key.
    pub create_index: u64,
    /// The raft index that last put it.
    pub mod_index: u64,
    /// The lease it is under; 0 for none.
    pub lease: u64,
}

/// One item of a backup, in the order it holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupItem {
    Lease { id: u64, ttl_ms: u64 },
    Pair(BackupPair),
}

#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("not a Strata backup (no STRATABK header)")]
    NotABackup,
    #[error("backup format version {0}; this build reads versions 1 and {VERSION}")]
    Version(u32),
    #[error("the backup is cut short: {0}")]
    CutShort(&'static str),
    #[error("the backup's checksum does not match its contents: it was changed or damaged")]
    Checksum,
    #[error("the backup says it holds {said} pairs but holds {held}")]
    Count { said: u64, held: u64 },
    #[error("the backup says it holds {said} leases but holds {held}")]
    LeaseCount { said: u64, held: u64 },
    #[error("the backup's keys are out of order at pair {0}")]
    Order(u64),
    #[error("the backup's leases are out of order, or come after a pair, at lease {0}")]
    LeaseOrder(u64),
    #[error("the backup holds an item of unknown kind {0:#04x}")]
    UnknownItem(u8),
    #[error("bytes after the backup's end")]
    Trailing,
    #[error("reading the backup: {0}")]
    Io(#[from] std::io::Error),
}

/// Writes a backup in pieces, hashing as it goes. Leases go first, ids
/// ascending, then the pairs, keys ascending.
pub struct BackupWriter {
    hash: Sha256,
    leases: u64,
    pairs: u64,
}

impl BackupWriter {
    /// The writer, and the header for the state at raft `index` of cluster
    /// `cluster_id`.
    pub fn start(index: u64, created_unix_ms: u64, cluster_id: u64) -> (BackupWriter, Vec<u8>) {
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_be_bytes());
        header.extend_from_slice(&index.to_be_bytes());
        header.extend_from_slice(&created_unix_ms.to_be_bytes());
        header.extend_from_slice(&cluster_id.to_be_bytes());
        let mut hash = Sha256::new();
        hash.update(&header);
        (
            BackupWriter {
                hash,
                leases: 0,
                pairs: 0,
            },
            header,
        )
    }

    /// Appends one lease to `out`.
    pub fn lease(&mut self, id: u64, ttl_ms: u64, out: &mut Vec<u8>) {
        let from = out.len();
        out.push(TAG_LEASE);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&ttl_ms.to_be_bytes());
        self.hash.update(&out[from..]);
        self.leases += 1;
    }

    /// Appends one pair to `out`.
    pub fn pair(&mut self, pair: &BackupPair, out: &mut Vec<u8>) {
        let from = out.len();
        out.push(TAG_PAIR);
        out.extend_from_slice(&(pair.key.len() as u32).to_be_bytes());
        out.extend_from_slice(&(pair.value.len() as u32).to_be_bytes());
        out.extend_from_slice(&pair.create_index.to_be_bytes());
        out.extend_from_slice(&pair.mod_index.to_be_bytes());
        out.extend_from_slice(&pair.lease.to_be_bytes());
        out.extend_from_slice(&pair.key);
        out.extend_from_slice(&pair.value);
        self.hash.update(&out[from..]);
        self.pairs += 1;
    }

    /// The end: the counts and the checksum.
    pub fn finish(mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + 16 + 32);
        out.push(TAG_END);
        out.extend_from_slice(&self.leases.to_be_bytes());
        out.extend_from_slice(&self.pairs.to_be_bytes());
        self.hash.update(&out);
        out.extend_from_slice(&self.hash.finalize());
        out
    }
}

/// Reads a backup from `R` an item at a time, hashing as it goes; the end
/// (counts, checksum, nothing after it) is checked when the items end.
/// Items handed out before an error are not to be trusted.
pub struct BackupReader<R> {
    inner: R,
    hash: Sha256,
    version: u32,
    index: u64,
    created_unix_ms: u64,
    cluster_id: u64,
    leases: u64,
    held: u64,
    last_lease: Option<u64>,
    last: Option<Vec<u8>>,
    info: Option<BackupInfo>,
}

impl<R: Read> BackupReader<R> {
    /// Reads and checks the header.
    pub fn new(mut inner: R) -> Result<Self, BackupError> {
        let mut header = [0u8; HEADER_LEN];
        read_exact(&mut inner, &mut header[..V1_HEADER_LEN], "in the header").map_err(
            |e| match e {
                BackupError::CutShort(_) => BackupError::NotABackup,
                other => other,
            },
        )?;
        if &header[..8] != MAGIC {
            return Err(BackupError::NotABackup);
        }
        let version = be_u32(&header[8..12]);
        let len = match version {
            VERSION => {
                read_exact(&mut inner, &mut header[V1_HEADER_LEN..], "in the header")?;
                HEADER_LEN
            }
            VERSION_PAIRS_ONLY => V1_HEADER_LEN,
            other => return Err(BackupError::Version(other)),
        };
        let mut hash = Sha256::new();
        hash.update(&header[..len]);
        Ok(BackupReader {
            inner,
            hash,
            version,
            index: be_u64(&header[12..20]),
            created_unix_ms: be_u64(&header[20..28]),
            cluster_id: if len == HEADER_LEN {
                be_u64(&header[28..36])
            } else {
                0
            },
            leases: 0,
            held: 0,
            last_lease: None,
            last: None,
            info: None,
        })
    }

    /// The raft index whose state the backup holds.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The format version of the backup.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The next item, or `None` once the items ended and the end checked
    /// out (then [`info`](Self::info) says what the backup holds).
    pub fn next_item(&mut self) -> Result<Option<BackupItem>, BackupError> {
        if self.info.is_some() {
            return Ok(None);
        }
        if self.version == VERSION_PAIRS_ONLY {
            return self.next_v1_pair();
        }
        let mut tag = [0u8; 1];
        read_exact(&mut self.inner, &mut tag, "no end mark")?;
        match tag[0] {
            TAG_LEASE => {
                let mut body = [0u8; 16];
                read_exact(&mut self.inner, &mut body, "in a lease")?;
                let id = be_u64(&body[..8]);
                if self.last.is_some() || self.last_lease.is_some_and(|l| l >= id) {
                    return Err(BackupError::LeaseOrder(self.leases));
                }
                self.hash.update(tag);
                self.hash.update(body);
                self.last_lease = Some(id);
                self.leases += 1;
                Ok(Some(BackupItem::Lease {
                    id,
                    ttl_ms: be_u64(&body[8..]),
                }))
            }
            TAG_PAIR => {
                let mut head = [0u8; 32];
                read_exact(&mut self.inner, &mut head, "in a pair's header")?;
                let key = read_bytes(&mut self.inner, be_u32(&head[..4]), "in a key")?;
                let value = read_bytes(&mut self.inner, be_u32(&head[4..8]), "in a value")?;
                if self.last.as_ref().is_some_and(|l| *l >= key) {
                    return Err(BackupError::Order(self.held));
                }
                self.hash.update(tag);
                self.hash.update(head);
                self.hash.update(&key);
                self.hash.update(&value);
                self.last = Some(key.clone());
                self.held += 1;
                Ok(Some(BackupItem::Pair(BackupPair {
                    key,
                    value,
                    create_index: be_u64(&head[8..16]),
                    mod_index: be_u64(&head[16..24]),
                    lease: be_u64(&head[24..32]),
                })))
            }
            TAG_END => {
                self.hash.update(tag);
                self.finish()?;
                Ok(None)
            }
            other => Err(BackupError::UnknownItem(other)),
        }
    }

    /// A version 1 pair: the key's indexes are the backup's.
    fn next_v1_pair(&mut self) -> Result<Option<BackupItem>, BackupError> {
        let mut lengths = [0u8; 4];
        read_exact(&mut self.inner, &mut lengths, "no end mark")?;
        let key_len = be_u32(&lengths);
        if key_len == V1_END {
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
        Ok(Some(BackupItem::Pair(BackupPair {
            key,
            value,
            create_index: self.index,
            mod_index: self.index,
            lease: 0,
        })))
    }

    /// Reads the end (after its mark) and checks it.
    fn finish(&mut self) -> Result<(), BackupError> {
        let said_leases = if self.version == VERSION_PAIRS_ONLY {
            0
        } else {
            let mut count = [0u8; 8];
            read_exact(&mut self.inner, &mut count, "in the end")?;
            self.hash.update(count);
            be_u64(&count)
        };
        let mut count = [0u8; 8];
        read_exact(&mut self.inner, &mut count, "in the end")?;
        if self.version != VERSION_PAIRS_ONLY {
            self.hash.update(count);
        }
        let said = be_u64(&count);
        let mut sha256 = [0u8; 32];
        read_exact(&mut self.inner, &mut sha256, "in the checksum")?;
        let mut more = [0u8; 1];
        if self.inner.read(&mut more)? != 0 {
            return Err(BackupError::Trailing);
        }
        if std::mem::take(&mut self.hash).finalize().as_slice() != sha256 {
            return Err(BackupError::Checksum);
        }
        if said != self.held {
            return Err(BackupError::Count {
                said,
                held: self.held,
            });
        }
        if said_leases != self.leases {
            return Err(BackupError::LeaseCount {
                said: said_leases,
                held: self.leases,
            });
        }
        self.info = Some(BackupInfo {
            version: self.version,
            index: self.index,
            created_unix_ms: self.created_unix_ms,
            cluster_id: self.cluster_id,
            leases: self.leases,
            pairs: self.held,
            sha256,
        });
        Ok(())
    }

    /// What the backup holds, once [`next_item`](Self::next_item) has
    /// returned `None`.
    pub fn info(&self) -> Option<&BackupInfo> {
        self.info.as_ref()
    }

    /// Reads the rest of the backup, checking it, and says what it holds.
    pub fn check_rest(mut self) -> Result<BackupInfo, BackupError> {
        while self.next_item()?.is_some() {}
        Ok(self.info.expect("set when the items end"))
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

/// Reads a whole backup held in memory: its info and its items, after
/// checking its header, order, counts and checksum.
pub fn read(bytes: &[u8]) -> Result<(BackupInfo, Vec<BackupItem>), BackupError> {
    let mut reader = BackupReader::new(bytes)?;
    let mut items = Vec::new();
    while let Some(item) = reader.next_item()? {
        items.push(item);
    }
    Ok((reader.info.expect("set when the items end"), items))
}

/// The pairs among `items`.
pub fn pairs(items: &[BackupItem]) -> impl Iterator<Item = &BackupPair> {
    items.iter().filter_map(|i| match i {
        BackupItem::Pair(p) => Some(p),
        BackupItem::Lease { .. } => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(key: &str, value: &str, create_index: u64, mod_index: u64, lease: u64) -> BackupPair {
        BackupPair {
            key: key.into(),
            value: value.into(),
            create_index,
            mod_index,
            lease,
        }
    }

    fn backup(leases: &[(u64, u64)], pairs: &[BackupPair]) -> Vec<u8> {
        let (mut w, mut out) = BackupWriter::start(42, 7, 0xc1);
        for (id, ttl) in leases {
            w.lease(*id, *ttl, &mut out);
        }
        for p in pairs {
            w.pair(p, &mut out);
        }
        out.extend(w.finish());
        out
    }

    fn sample() -> Vec<u8> {
        backup(
            &[(3, 5000), (9, 60_000)],
            &[
                pair("a", "1", 10, 12, 0),
                pair("b", "", 11, 11, 3),
                pair("c", "three", 40, 41, 9),
            ],
        )
    }

    #[test]
    fn a_backup_reads_back_with_its_leases_pairs_and_indexes() {
        let (info, items) = read(&sample()).unwrap();
        assert_eq!(
            (
                info.version,
                info.index,
                info.created_unix_ms,
                info.cluster_id,
                info.leases,
                info.pairs
            ),
            (2, 42, 7, 0xc1, 2, 3)
        );
        assert_eq!(
            items,
            vec![
                BackupItem::Lease {
                    id: 3,
                    ttl_ms: 5000
                },
                BackupItem::Lease {
                    id: 9,
                    ttl_ms: 60_000
                },
                BackupItem::Pair(pair("a", "1", 10, 12, 0)),
                BackupItem::Pair(pair("b", "", 11, 11, 3)),
                BackupItem::Pair(pair("c", "three", 40, 41, 9)),
            ]
        );
        assert_eq!(info.sha256_hex().len(), 64);
        let (empty, none) = read(&backup(&[], &[])).unwrap();
        assert_eq!((empty.leases, empty.pairs, none.len()), (0, 0, 0));
    }

    /// A version 1 file, as the first format wrote it.
    fn version_1(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&1u32.to_be_bytes());
        out.extend_from_slice(&42u64.to_be_bytes());
        out.extend_from_slice(&7u64.to_be_bytes());
        for (k, v) in pairs {
            out.extend_from_slice(&(k.len() as u32).to_be_bytes());
            out.extend_from_slice(&(v.len() as u32).to_be_bytes());
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(v.as_bytes());
        }
        let sha = Sha256::digest(&out);
        out.extend_from_slice(&u32::MAX.to_be_bytes());
        out.extend_from_slice(&(pairs.len() as u64).to_be_bytes());
        out.extend_from_slice(&sha);
        out
    }

    #[test]
    fn a_version_1_backup_still_reads_its_keys_at_the_backups_index() {
        let old = version_1(&[("a", "1"), ("b", "2")]);
        let (info, items) = read(&old).unwrap();
        assert_eq!(
            (
                info.version,
                info.index,
                info.cluster_id,
                info.leases,
                info.pairs
            ),
            (1, 42, 0, 0, 2)
        );
        assert_eq!(
            items,
            vec![
                BackupItem::Pair(pair("a", "1", 42, 42, 0)),
                BackupItem::Pair(pair("b", "2", 42, 42, 0)),
            ]
        );
        for i in 0..old.len() {
            let mut damaged = old.clone();
            damaged[i] ^= 0x40;
            assert!(
                read(&damaged).is_err(),
                "version 1: byte {i} changed and still read"
            );
        }
    }

    #[test]
    fn a_damaged_cut_or_disordered_backup_does_not_read() {
        // Proves: every changed byte, every cut, pairs or leases out of
        // order, a lease after a pair and extra bytes are refused, each
        // with its reason.
        let b = sample();
        for i in 0..b.len() {
            let mut damaged = b.clone();
            damaged[i] ^= 0x40;
            assert!(read(&damaged).is_err(), "byte {i} changed and still read");
        }
        for cut in 0..b.len() {
            assert!(read(&b[..cut]).is_err(), "cut at {cut} still read");
        }
        let swapped = backup(&[], &[pair("b", "2", 1, 1, 0), pair("a", "1", 1, 1, 0)]);
        assert!(matches!(read(&swapped), Err(BackupError::Order(1))));
        let leases = backup(&[(9, 1), (3, 1)], &[]);
        assert!(matches!(read(&leases), Err(BackupError::LeaseOrder(1))));
        let (mut w, mut late) = BackupWriter::start(1, 1, 0);
        w.pair(&pair("a", "1", 1, 1, 0), &mut late);
        w.lease(3, 1, &mut late);
        late.extend(w.finish());
        assert!(matches!(read(&late), Err(BackupError::LeaseOrder(0))));
        let mut longer = b.clone();
        longer.push(0);
        assert!(matches!(read(&longer), Err(BackupError::Trailing)));
        assert!(matches!(read(b"hello"), Err(BackupError::NotABackup)));
        let mut future = b.clone();
        future[11] = 3;
        assert!(matches!(read(&future), Err(BackupError::Version(3))));
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
                    let p = BackupPair {
                        key: format!("k{:08}", self.next).into_bytes(),
                        value: vec![7u8; 64 << 10],
                        create_index: 1,
                        mod_index: 2,
                        lease: 0,
                    };
                    w.pair(&p, &mut self.pending);
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
    fn a_backup_is_read_an_item_at_a_time_in_bounded_memory() {
        // Proves: checking a 64 MiB backup through a reader never makes an
        // allocation larger than a few pairs, so a backup larger than
        // memory can be checked and restored.
        let (writer, header) = BackupWriter::start(5, 6, 0);
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
        let (_, mut b) = BackupWriter::start(1, 1, 0);
        b.push(TAG_PAIR);
        b.extend_from_slice(&(u32::MAX - 1).to_be_bytes());
        b.extend_from_slice(&[0u8; 28]);
        b.extend_from_slice(b"short");
        assert!(matches!(read(&b), Err(BackupError::CutShort("in a key"))));
    }
}
