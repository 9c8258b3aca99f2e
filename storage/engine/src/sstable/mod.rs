//! Sorted string tables: immutable files of internal-key/value entries.
//!
//! File layout (see `docs/format.md`):
//! `data block* | filter block | index block | footer`, every block followed
//! by a `crc32: u32 LE` of its bytes. The index block maps the last key of
//! each data block to its [`BlockHandle`]; the footer locates the index and
//! filter and carries the magic number and format version.

pub(crate) mod block;
pub(crate) mod bloom;
mod builder;
mod cache;
mod table;

pub(crate) use builder::{TableBuilder, TableSummary};
pub(crate) use cache::BlockCache;
pub(crate) use table::{Table, TableIter};

use crate::coding::{Decoder, put_varint};

/// Identifies a Strata table; the ASCII bytes `STRATAT1` read as `u64 LE`.
pub(crate) const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"STRATAT1");
/// Bumped on any incompatible layout change.
pub(crate) const TABLE_FORMAT_VERSION: u32 = 1;
/// Fixed size of the footer at the end of every table.
pub(crate) const FOOTER_BYTES: usize = 56;
/// Size of the checksum after every block.
pub(crate) const BLOCK_TRAILER_BYTES: usize = 4;

/// Where a block lives in its file (size excludes the checksum trailer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockHandle {
    pub(crate) offset: u64,
    pub(crate) size: u64,
}

impl BlockHandle {
    pub(crate) fn encode(&self, buf: &mut Vec<u8>) {
        put_varint(buf, self.offset);
        put_varint(buf, self.size);
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<BlockHandle> {
        let mut d = Decoder::new(bytes);
        let handle = BlockHandle {
            offset: d.varint()?,
            size: d.varint()?,
        };
        d.is_empty().then_some(handle)
    }
}

/// The fixed-size trailer of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) index: BlockHandle,
    pub(crate) filter: BlockHandle,
    pub(crate) num_entries: u64,
}

impl Footer {
    /// `index.offset | index.size | filter.offset | filter.size | num_entries`
    /// (u64 LE each), `format_version: u32 LE`, `crc32` of the preceding 44
    /// bytes, `magic: u64 LE`.
    pub(crate) fn encode(&self) -> [u8; FOOTER_BYTES] {
        let mut buf = Vec::with_capacity(FOOTER_BYTES);
        for v in [
            self.index.offset,
            self.index.size,
            self.filter.offset,
            self.filter.size,
            self.num_entries,
        ] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&TABLE_FORMAT_VERSION.to_le_bytes());
        let crc = crc32fast::hash(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        buf.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
        let mut out = [0u8; FOOTER_BYTES];
        out.copy_from_slice(&buf);
        out
    }

    /// Decodes and checks a footer; the error says what is wrong.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Footer, String> {
        let mut d = Decoder::new(bytes);
        let mut field = || d.u64().ok_or_else(|| "footer is truncated".to_string());
        let (io, is, fo, fs, n) = (field()?, field()?, field()?, field()?, field()?);
        let version = d.u32().ok_or("footer is truncated")?;
        let crc = d.u32().ok_or("footer is truncated")?;
        let magic = d.u64().ok_or("footer is truncated")?;
        if magic != TABLE_MAGIC {
            return Err(format!("bad magic {magic:#x}"));
        }
        if crc != crc32fast::hash(&bytes[..44]) {
            return Err("footer checksum mismatch".to_string());
        }
        if version != TABLE_FORMAT_VERSION {
            return Err(format!("unsupported table format version {version}"));
        }
        Ok(Footer {
            index: BlockHandle {
                offset: io,
                size: is,
            },
            filter: BlockHandle {
                offset: fo,
                size: fs,
            },
            num_entries: n,
        })
    }
}

#[cfg(test)]
mod tests;
