//! Version edits: the records of the manifest log.
//!
//! Encoding: a sequence of tagged fields, each `tag: u8` then its body:
//! 1 `log_number: varint`, 2 `next_file_number: varint`, 3 `last_seq:
//! varint`, 4 deleted file `level: varint | number: varint`, 5 new file
//! `level: varint | number: varint | size: varint | smallest: varint len +
//! bytes | largest: varint len + bytes`. Unknown tags are corruption.

use crate::coding::{Decoder, put_length_prefixed, put_varint};
use crate::key::{SeqNo, parse_internal_key};
use crate::version::{FileMeta, NUM_LEVELS};

const TAG_LOG_NUMBER: u8 = 1;
const TAG_NEXT_FILE_NUMBER: u8 = 2;
const TAG_LAST_SEQ: u8 = 3;
const TAG_DELETED_FILE: u8 = 4;
const TAG_NEW_FILE: u8 = 5;

/// A change to the level layout and counters, applied atomically.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VersionEdit {
    /// WAL segments numbered below this are no longer needed.
    pub(crate) log_number: Option<u64>,
    /// Every file number in use is below this.
    pub(crate) next_file_number: Option<u64>,
    /// Every sequence number in a table is at most this.
    pub(crate) last_seq: Option<SeqNo>,
    pub(crate) deleted_files: Vec<(usize, u64)>,
    pub(crate) new_files: Vec<(usize, FileMeta)>,
}

impl VersionEdit {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        for (tag, value) in [
            (TAG_LOG_NUMBER, self.log_number),
            (TAG_NEXT_FILE_NUMBER, self.next_file_number),
            (TAG_LAST_SEQ, self.last_seq),
        ] {
            if let Some(v) = value {
                buf.push(tag);
                put_varint(&mut buf, v);
            }
        }
        for &(level, number) in &self.deleted_files {
            buf.push(TAG_DELETED_FILE);
            put_varint(&mut buf, level as u64);
            put_varint(&mut buf, number);
        }
        for (level, meta) in &self.new_files {
            buf.push(TAG_NEW_FILE);
            put_varint(&mut buf, *level as u64);
            put_varint(&mut buf, meta.number);
            put_varint(&mut buf, meta.size_bytes);
            put_length_prefixed(&mut buf, &meta.smallest);
            put_length_prefixed(&mut buf, &meta.largest);
        }
        buf
    }

    /// Decodes an edit; the error names what is malformed.
    pub(crate) fn decode(bytes: &[u8]) -> Result<VersionEdit, String> {
        let mut d = Decoder::new(bytes);
        let mut edit = VersionEdit::default();
        while !d.is_empty() {
            let tag = d.u8().ok_or("truncated tag")?;
            let truncated = || format!("truncated field with tag {tag}");
            match tag {
                TAG_LOG_NUMBER => edit.log_number = Some(d.varint().ok_or_else(truncated)?),
                TAG_NEXT_FILE_NUMBER => {
                    edit.next_file_number = Some(d.varint().ok_or_else(truncated)?)
                }
                TAG_LAST_SEQ => edit.last_seq = Some(d.varint().ok_or_else(truncated)?),
                TAG_DELETED_FILE => {
                    let level = level(&mut d).ok_or_else(truncated)?;
                    edit.deleted_files
                        .push((level, d.varint().ok_or_else(truncated)?));
                }
                TAG_NEW_FILE => {
                    let level = level(&mut d).ok_or_else(truncated)?;
                    let meta = (|| {
                        Some(FileMeta {
                            number: d.varint()?,
                            size_bytes: d.varint()?,
                            smallest: d.length_prefixed()?.to_vec(),
                            largest: d.length_prefixed()?.to_vec(),
                        })
                    })()
                    .ok_or_else(truncated)?;
                    if parse_internal_key(&meta.smallest).is_none()
                        || parse_internal_key(&meta.largest).is_none()
                    {
                        return Err(format!("file {} has malformed key bounds", meta.number));
                    }
                    edit.new_files.push((level, meta));
                }
                other => return Err(format!("unknown tag {other}")),
            }
        }
        Ok(edit)
    }
}

fn level(d: &mut Decoder<'_>) -> Option<usize> {
    d.varint_usize().filter(|&l| l < NUM_LEVELS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, internal_key};

    fn sample() -> VersionEdit {
        VersionEdit {
            log_number: Some(9),
            next_file_number: Some(12),
            last_seq: Some(1 << 40),
            deleted_files: vec![(0, 3), (1, 4)],
            new_files: vec![(
                1,
                FileMeta {
                    number: 11,
                    size_bytes: 4096,
                    smallest: internal_key(b"a", 1, ValueKind::Put),
                    largest: internal_key(b"z", 2, ValueKind::Tombstone),
                },
            )],
        }
    }

    // Proves that an edit with every field round-trips.
    #[test]
    fn version_edit_round_trips() {
        let edit = sample();
        assert_eq!(VersionEdit::decode(&edit.encode()), Ok(edit));
        assert_eq!(VersionEdit::decode(&[]), Ok(VersionEdit::default()));
    }

    // Proves that truncation, unknown tags and bad levels are rejected.
    #[test]
    fn malformed_version_edit_is_rejected() {
        let bytes = sample().encode();
        for cut in 1..bytes.len() {
            // A cut that lands exactly between fields decodes as a shorter edit;
            // any other cut must fail.
            if let Ok(edit) = VersionEdit::decode(&bytes[..cut]) {
                assert_ne!(edit, sample());
            }
        }
        assert!(VersionEdit::decode(&[99]).is_err());
        assert!(VersionEdit::decode(&[TAG_DELETED_FILE, 7, 1]).is_err());
    }
}
