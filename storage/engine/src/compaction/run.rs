//! Merges compaction inputs into new tables.

use std::io;
use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::fs::WritableFile;
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind, parse_internal_key};
use crate::options::Options;
use crate::sstable::{TableBuilder, TableSummary};
use crate::version::FileMeta;

/// Writes the merged `input` into tables of about `target_file_size_bytes`.
///
/// `read points` (ascending) are the live read point sequence numbers. They cut
/// each key's versions into stripes: a stripe holds the versions that the
/// same read points see (seq in `(s[i-1], s[i]]`, and the newest stripe above
/// every read point). Only the newest version of each stripe is kept: no read,
/// at a read point or at the latest sequence number, can see the others. A
/// tombstone that is the newest version of the oldest stripe is dropped too
/// when the output is the bottommost data for its range: nothing older
/// remains that it would need to hide. A read in flight without a read point
/// keeps the input tables it started with.
///
/// `new_file` returns the number and handle of a fresh table file; `pace`
/// is called with the bytes written so far after every entry (the caller
/// rate-limits there).
pub(crate) fn write_compaction_outputs(
    input: &mut dyn InternalIterator,
    bottommost: bool,
    read_points: &[SeqNo],
    opts: &Options,
    mut new_file: impl FnMut() -> Result<(u64, Arc<dyn WritableFile>)>,
    mut pace: impl FnMut(u64),
) -> Result<Vec<FileMeta>> {
    debug_assert!(read_points.is_sorted());
    let mut last_stripe = 0usize;
    let mut written_before = 0u64;
    let mut outputs = Vec::new();
    let mut current: Option<(u64, TableBuilder)> = None;
    let mut last_user_key: Option<Vec<u8>> = None;
    let io_err = |e: io::Error| EngineError::io("writing compaction output", e);
    input.seek_to_first()?;
    while input.valid() {
        let parsed = parse_internal_key(input.key())
            .ok_or_else(|| EngineError::corruption("malformed key in compaction input"))?;
        let stripe = read_points.partition_point(|&s| s < parsed.seq);
        let same_key = last_user_key.as_deref() == Some(parsed.user_key);
        let shadowed = same_key && stripe == last_stripe;
        if !same_key {
            // A table is cut only between user keys: the versions of one
            // key that read points keep must share a table, or two tables of
            // one level would overlap.
            if let Some((number, builder)) =
                current.take_if(|(_, b)| b.estimated_size_bytes() >= opts.target_file_size_bytes)
            {
                let meta = to_meta(number, builder.finish().map_err(io_err)?);
                written_before += meta.size_bytes;
                outputs.push(meta);
            }
            last_user_key = Some(parsed.user_key.to_vec());
        }
        last_stripe = stripe;
        let obsolete_tombstone = bottommost && parsed.kind == ValueKind::Tombstone && stripe == 0;
        if !shadowed && !obsolete_tombstone {
            if current.is_none() {
                let (number, file) = new_file()?;
                let builder = TableBuilder::new(
                    file,
                    opts.block_size_bytes,
                    opts.block_restart_interval,
                    opts.bloom_bits_per_key,
                );
                current = Some((number, builder));
            }
            if let Some((_, builder)) = &mut current {
                builder.add(input.key(), input.value()).map_err(io_err)?;
                pace(written_before + builder.estimated_size_bytes());
            }
        }
        input.next()?;
    }
    if let Some((number, builder)) = current {
        outputs.push(to_meta(number, builder.finish().map_err(io_err)?));
    }
    Ok(outputs)
}

fn to_meta(number: u64, summary: TableSummary) -> FileMeta {
    FileMeta {
        number,
        size_bytes: summary.size_bytes,
        smallest: summary.smallest,
        largest: summary.largest,
    }
}
