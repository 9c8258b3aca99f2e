//! Checksummed record log: the framing shared by the engine's WAL and
//! manifest and by the raft log.
//!
//! A record is a 12-byte header followed by its payload:
//! `len: u32 LE | payload_crc: u32 LE | header_crc: u32 LE`, where
//! `header_crc` covers the first 8 header bytes. The header checksum lets
//! recovery tell a torn tail (nothing intact after the damage) from damage in
//! the middle of the log (an intact record follows), without trusting a
//! length field that may itself be damaged.

/// Size of a record header.
pub const HEADER_BYTES: usize = 12;

/// The unit a disk writes whole. Unsynced data a crash loses goes in whole
/// sectors (or pages of several), and a sector never written reads as
/// zeros.
pub const SECTOR_BYTES: usize = 512;

/// Appends one framed record holding `payload` to `buf`.
///
/// # Panics
/// If the payload is 4 GiB or larger, which no caller produces.
pub fn encode_record(buf: &mut Vec<u8>, payload: &[u8]) {
    encode_record_parts(buf, &[payload]);
}

/// Appends one framed record whose payload is `parts` concatenated, without
/// building the payload first (a kind byte before a body, say).
///
/// # Panics
/// If the payload is 4 GiB or larger, which no caller produces.
pub fn encode_record_parts(buf: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let len = u32::try_from(len).expect("a record is smaller than 4 GiB");
    let mut hasher = crc32fast::Hasher::new();
    for part in parts {
        hasher.update(part);
    }
    let start = buf.len();
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(&hasher.finalize().to_le_bytes());
    let header_crc = crc32fast::hash(&buf[start..start + 8]);
    buf.extend_from_slice(&header_crc.to_le_bytes());
    for part in parts {
        buf.extend_from_slice(part);
    }
}

/// How reading a log ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEnd {
    /// Length of the intact prefix of the log.
    pub valid_len: u64,
    /// Whether a torn tail followed the intact prefix.
    pub torn_tail: bool,
}

/// One intact record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRecord<'a> {
    /// Where the record's header starts.
    pub offset: u64,
    /// The record's payload.
    pub payload: &'a [u8],
}

impl LogRecord<'_> {
    /// Where the next record starts.
    pub fn end(&self) -> u64 {
        self.offset + (HEADER_BYTES + self.payload.len()) as u64
    }
}

/// Why a log cannot be read past some offset. A torn tail that is tolerated
/// is not an error (see [`LogEnd::torn_tail`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogCorruption {
    /// Damage in a log that may not have a torn tail.
    #[error("damaged record at offset {offset}")]
    Damaged {
        /// Where the damaged record starts.
        offset: u64,
    },
    /// Damage followed by an intact record: not a torn write.
    #[error("damaged record at offset {offset} followed by intact records")]
    DamagedBeforeIntact {
        /// Where the damaged record starts.
        offset: u64,
    },
    /// An intact header declares more payload than the log allows: the
    /// writer never produces one, so it is not a torn write either.
    #[error("record at offset {offset} declares {len_bytes} bytes, above the limit of {max_bytes}")]
    Oversized {
        /// Where the record starts.
        offset: u64,
        /// The declared payload length.
        len_bytes: u64,
        /// The reader's limit.
        max_bytes: u64,
    },
}

impl LogCorruption {
    /// Where the bad record starts.
    pub fn offset(&self) -> u64 {
        match *self {
            LogCorruption::Damaged { offset }
            | LogCorruption::DamagedBeforeIntact { offset }
            | LogCorruption::Oversized { offset, .. } => offset,
        }
    }
}

/// Outcome of decoding the record at one offset.
enum Decoded<'a> {
    Ok {
        payload: &'a [u8],
        next: usize,
    },
    /// The header is incomplete or fails its checksum: its length is unknown.
    BadHeader,
    /// The header is intact but declares more than the limit.
    Oversized {
        len: u64,
    },
    /// The header is intact but the payload runs past the end of the log.
    Incomplete,
    /// The header is intact but the payload fails its checksum.
    BadPayload {
        next: usize,
    },
}

/// The offset of the first byte of `bytes[from..]` that is not zero.
/// Compares a block at a time with a block of zeros (a `memcmp`, fast in
/// any build): a log file can end in megabytes of zeros (space allocated
/// ahead), which recovery reads at every start.
pub fn first_nonzero(bytes: &[u8], from: usize) -> Option<usize> {
    const BLOCK: usize = 4096;
    static ZEROS: [u8; BLOCK] = [0; BLOCK];
    let rest = bytes.get(from..)?;
    let mut at = from;
    for block in rest.chunks(BLOCK) {
        if block != &ZEROS[..block.len()] {
            return block.iter().position(|&b| b != 0).map(|i| at + i);
        }
        at += block.len();
    }
    None
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads the records of one log file, oldest first, then reports how the
/// log ended ([`LogReader::end`]).
///
/// A damaged record with no intact record after it is a torn tail:
/// accepted when torn tails are tolerated (the newest log segment, the
/// manifest), reported as [`LogCorruption::Damaged`] otherwise. Damage
/// followed by an intact record, and a header declaring more than the
/// limit, are always corruption. After an error the reader yields nothing
/// more.
#[derive(Debug)]
pub struct LogReader<'a> {
    bytes: &'a [u8],
    offset: usize,
    tolerate_torn_tail: bool,
    max_payload_bytes: u64,
    end: Option<LogEnd>,
    failed: bool,
}

impl<'a> LogReader<'a> {
    /// Reads `bytes`, accepting a torn tail when `tolerate_torn_tail`.
    pub fn new(bytes: &'a [u8], tolerate_torn_tail: bool) -> Self {
        LogReader {
            bytes,
            offset: 0,
            tolerate_torn_tail,
            max_payload_bytes: u64::from(u32::MAX),
            end: None,
            failed: false,
        }
    }

    /// Treats a payload longer than `max` as corruption (the writer refuses
    /// to write one), instead of trusting any length a header declares.
    pub fn max_payload_bytes(mut self, max: usize) -> Self {
        self.max_payload_bytes = max as u64;
        self
    }

    /// How the log ended: `Some` once every record was read without
    /// corruption.
    pub fn end(&self) -> Option<LogEnd> {
        self.end
    }

    fn decode_at(&self, offset: usize) -> Decoded<'a> {
        let bytes = self.bytes;
        let Some(header) = bytes.get(offset..offset + HEADER_BYTES) else {
            return Decoded::BadHeader;
        };
        if crc32fast::hash(&header[..8]) != read_u32(header, 8) {
            return Decoded::BadHeader;
        }
        let len = u64::from(read_u32(header, 0));
        if len > self.max_payload_bytes {
            return Decoded::Oversized { len };
        }
        let start = offset + HEADER_BYTES;
        let next = start + len as usize;
        let Some(payload) = bytes.get(start..next) else {
            return Decoded::Incomplete;
        };
        if crc32fast::hash(payload) != read_u32(header, 4) {
            return Decoded::BadPayload { next };
        }
        Decoded::Ok { payload, next }
    }

    /// Whether the damaged record at `offset`, whose bytes run to `end` as
    /// far as is known, lies on a sector that was never written: from the
    /// record (or a sector's start) to the sector's end (or the log's), all
    /// zeros. Unsynced writes reach the disk in any order, so the sector
    /// lost at a crash may be followed by one that was written; damage of
    /// this shape ends the log there instead of being called corruption.
    fn on_unwritten_sector(&self, offset: usize, end: usize) -> bool {
        let end = end.min(self.bytes.len());
        let mut from = offset;
        while from < end {
            let sector_end = (from / SECTOR_BYTES + 1) * SECTOR_BYTES;
            let to = sector_end.min(self.bytes.len());
            if self.bytes[from..to].iter().all(|&b| b == 0) {
                return true;
            }
            from = sector_end;
        }
        false
    }

    /// Whether an intact header starts anywhere in `bytes[from..]`.
    ///
    /// A header of twelve zero bytes is never intact (the checksum of eight
    /// zero bytes is not zero), so only offsets whose header would hold a
    /// byte other than zero are tried, and runs of zeros (a log file's
    /// space allocated ahead, megabytes of it) are skipped a word at a
    /// time rather than checksummed at every offset.
    fn intact_record_after(&self, from: usize) -> bool {
        let end = self.bytes.len().saturating_sub(HEADER_BYTES - 1);
        let mut at = from;
        while at < end {
            let Some(nonzero) = first_nonzero(self.bytes, at) else {
                return false;
            };
            // Every header that holds this byte, from where the search is.
            let first = at.max(nonzero.saturating_sub(HEADER_BYTES - 1));
            if (first..=nonzero.min(end - 1)).any(|o| {
                matches!(
                    self.decode_at(o),
                    Decoded::Ok { .. } | Decoded::Oversized { .. }
                )
            }) {
                return true;
            }
            at = nonzero + 1;
        }
        false
    }

    fn finish(&mut self, torn_tail: bool) {
        self.end = Some(LogEnd {
            valid_len: self.offset as u64,
            torn_tail,
        });
    }
}

impl<'a> Iterator for LogReader<'a> {
    type Item = Result<LogRecord<'a>, LogCorruption>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.end.is_some() {
            return None;
        }
        if self.offset >= self.bytes.len() {
            self.finish(false);
            return None;
        }
        let offset = self.offset as u64;
        let damaged = match self.decode_at(self.offset) {
            Decoded::Ok { payload, next } => {
                self.offset = next;
                return Some(Ok(LogRecord { offset, payload }));
            }
            Decoded::Oversized { len } => {
                self.failed = true;
                return Some(Err(LogCorruption::Oversized {
                    offset,
                    len_bytes: len,
                    max_bytes: self.max_payload_bytes,
                }));
            }
            damaged => damaged,
        };
        if !self.tolerate_torn_tail {
            self.failed = true;
            return Some(Err(LogCorruption::Damaged { offset }));
        }
        // Where an intact record could start if this one is not the tail:
        // after it when its header (and so its length) is trustworthy,
        // anywhere after its start otherwise.
        let resume = match damaged {
            Decoded::BadPayload { next } => Some(next),
            Decoded::BadHeader => Some(self.offset + 1),
            Decoded::Incomplete | Decoded::Ok { .. } | Decoded::Oversized { .. } => None,
        };
        // How far the damaged record is known to reach: to its end when
        // its header is intact, over the header otherwise.
        let known_end = match damaged {
            Decoded::BadPayload { next } => next,
            _ => self.offset + HEADER_BYTES,
        };
        if resume.is_some_and(|from| self.intact_record_after(from))
            && !self.on_unwritten_sector(self.offset, known_end)
        {
            self.failed = true;
            return Some(Err(LogCorruption::DamagedBeforeIntact { offset }));
        }
        self.finish(true);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_log(records: &[&[u8]]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for r in records {
            encode_record(&mut bytes, r);
        }
        bytes
    }

    fn read_all(bytes: &[u8], tolerate: bool) -> Result<(Vec<Vec<u8>>, LogEnd), LogCorruption> {
        let mut reader = LogReader::new(bytes, tolerate);
        let mut out = Vec::new();
        for record in &mut reader {
            out.push(record?.payload.to_vec());
        }
        Ok((
            out,
            reader.end().expect("a reader without errors has an end"),
        ))
    }

    // Proves that records round-trip, including empty ones, and that a
    // record built from parts equals one built from the joined payload.
    #[test]
    fn records_round_trip() {
        let bytes = write_log(&[b"one", b"", b"three"]);
        let (records, end) = read_all(&bytes, false).expect("intact log");
        assert_eq!(records, vec![b"one".to_vec(), vec![], b"three".to_vec()]);
        assert_eq!(
            end,
            LogEnd {
                valid_len: bytes.len() as u64,
                torn_tail: false
            }
        );
        let mut parts = Vec::new();
        encode_record_parts(&mut parts, &[b"th", b"", b"ree"]);
        assert_eq!(parts, write_log(&[b"three"]));
    }

    // Proves that a log cut at any offset yields exactly the complete records.
    #[test]
    fn cut_at_every_offset_yields_complete_prefix() {
        let records: [&[u8]; 3] = [b"alpha", b"beta-beta", b"gamma-gamma-gamma"];
        let bytes = write_log(&records);
        let ends: Vec<usize> = records
            .iter()
            .scan(0, |acc, r| {
                *acc += HEADER_BYTES + r.len();
                Some(*acc)
            })
            .collect();
        for cut in 0..=bytes.len() {
            let (got, end) = read_all(&bytes[..cut], true).expect("torn tail is tolerated");
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(got.len(), complete, "cut at {cut}");
            assert_eq!(end.torn_tail, !ends.contains(&cut) && cut != 0);
            let valid = ends.iter().copied().filter(|&e| e <= cut).max();
            assert_eq!(end.valid_len, valid.unwrap_or(0) as u64, "cut at {cut}");
        }
    }

    // Proves that zeros after the last record (pre-extended file) are a torn tail.
    #[test]
    fn zero_filled_tail_is_torn_tail() {
        let mut bytes = write_log(&[b"one"]);
        bytes.extend_from_slice(&[0; 100]);
        let (got, end) = read_all(&bytes, true).expect("tolerated");
        assert_eq!(got.len(), 1);
        assert!(end.torn_tail);
        assert_eq!(
            read_all(&bytes, false),
            Err(LogCorruption::Damaged {
                offset: (HEADER_BYTES + 3) as u64
            })
        );
    }

    // Proves that damage followed by an intact record is corruption even when
    // torn tails are tolerated, whether the payload or the header is hit.
    // Proves that an intact record after a long run of zeros is still
    // found (the scan skips zeros, it does not stop at them), and that a
    // log ending in megabytes of zeros is a torn tail after its records.
    #[test]
    fn intact_record_after_a_run_of_zeros_is_found() {
        let mut bytes = write_log(&[b"one", b"two"]);
        let end = bytes.len();
        bytes.resize(end + 100_003, 0);
        let (records, log_end) = read_all(&bytes, true).expect("a torn tail");
        assert_eq!(records.len(), 2);
        assert_eq!(log_end.valid_len, end as u64);
        assert!(log_end.torn_tail);
        for gap in [0, 1, 7, 8, 9, 4095, 100_003] {
            let mut bytes = write_log(&[b"one"]);
            // Damage that is not zeros, then zeros, then an intact record:
            // corruption, however long the zeros in between.
            bytes.extend_from_slice(&[0xab; HEADER_BYTES]);
            bytes.resize(bytes.len() + gap, 0);
            encode_record(&mut bytes, b"after the zeros");
            let err = read_all(&bytes, true).expect_err("an intact record follows");
            assert!(
                matches!(err, LogCorruption::DamagedBeforeIntact { .. }),
                "gap {gap}: {err:?}"
            );
        }
    }

    #[test]
    fn first_nonzero_finds_the_first_byte_that_is_not_zero() {
        let mut bytes = vec![0u8; 37];
        assert_eq!(first_nonzero(&bytes, 0), None);
        assert_eq!(first_nonzero(&bytes, 40), None);
        for at in [0, 5, 7, 8, 16, 31, 36] {
            bytes.fill(0);
            bytes[at] = 1;
            assert_eq!(first_nonzero(&bytes, 0), Some(at), "at {at}");
            assert_eq!(first_nonzero(&bytes, at), Some(at), "at {at}");
            assert_eq!(first_nonzero(&bytes, at + 1), None, "at {at}");
        }
    }

    #[test]
    fn damage_before_intact_record_is_corruption() {
        let clean = write_log(&[b"first", b"second", b"third"]);
        for flip in [HEADER_BYTES + HEADER_BYTES + 5 + 2, HEADER_BYTES + 5 + 1] {
            let mut bytes = clean.clone();
            bytes[flip] ^= 0x40;
            let err = read_all(&bytes, true).expect_err("must be corruption");
            assert_eq!(
                err,
                LogCorruption::DamagedBeforeIntact {
                    offset: (HEADER_BYTES + 5) as u64
                }
            );
        }
    }

    // Proves that a record lying on a zeroed sector (a page the disk never
    // wrote back, while a later one was) ends a log whose torn tail is
    // tolerated, even with intact records after it, whether the zeros hit
    // the record's header or the middle of its payload; a log whose torn
    // tail is not tolerated still reports the damage.
    #[test]
    fn unwritten_sector_before_intact_records_is_a_torn_tail() {
        let first = vec![1u8; 100];
        let big = vec![2u8; 3 * SECTOR_BYTES];
        let clean = write_log(&[&first, &big, b"after", b"more"]);
        let big_at = HEADER_BYTES + first.len();
        // The sector holding the big record's header, from the header on;
        // then a sector inside its payload.
        let header_sector = big_at..SECTOR_BYTES;
        let payload_sector = 2 * SECTOR_BYTES..3 * SECTOR_BYTES;
        for zeroed in [header_sector, payload_sector] {
            let mut bytes = clean.clone();
            bytes[zeroed.clone()].fill(0);
            let (got, end) = read_all(&bytes, true).expect("a torn tail");
            assert_eq!(got, vec![first.clone()], "zeroed {zeroed:?}");
            assert_eq!(
                end,
                LogEnd {
                    valid_len: big_at as u64,
                    torn_tail: true
                }
            );
            assert_eq!(
                read_all(&bytes, false),
                Err(LogCorruption::Damaged {
                    offset: big_at as u64
                })
            );
        }
        // Zeros that stop short of a sector's end are not a sector that
        // was never written: still corruption.
        let mut bytes = clean.clone();
        bytes[2 * SECTOR_BYTES..3 * SECTOR_BYTES - 1].fill(0);
        assert_eq!(
            read_all(&bytes, true),
            Err(LogCorruption::DamagedBeforeIntact {
                offset: big_at as u64
            })
        );
    }

    // Proves that an intact header declaring more than the limit is
    // corruption even as the very last record of a log whose torn tail is
    // tolerated, and that the limit itself is accepted.
    #[test]
    fn length_above_limit_is_corruption_even_at_the_tail() {
        let bytes = write_log(&[b"ok", b"12345678"]);
        let mut reader = LogReader::new(&bytes, true).max_payload_bytes(7);
        assert_eq!(
            reader.next().map(|r| r.map(|r| r.payload)),
            Some(Ok(&b"ok"[..]))
        );
        assert_eq!(
            reader.next(),
            Some(Err(LogCorruption::Oversized {
                offset: (HEADER_BYTES + 2) as u64,
                len_bytes: 8,
                max_bytes: 7
            }))
        );
        assert_eq!(reader.next(), None, "nothing after an error");
        assert_eq!(reader.end(), None);
        // Only the header is there: still not a torn write.
        let header_only = &bytes[..HEADER_BYTES * 2 + 2];
        assert!(matches!(
            LogReader::new(header_only, true)
                .max_payload_bytes(7)
                .nth(1),
            Some(Err(LogCorruption::Oversized { .. }))
        ));
        let exact = write_log(&[b"1234567"]);
        let mut at_limit = LogReader::new(&exact, false).max_payload_bytes(7);
        assert!(matches!(at_limit.next(), Some(Ok(_))));
        assert_eq!(at_limit.next(), None);
    }
}
