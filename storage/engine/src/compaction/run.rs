//! Merges compaction inputs into new tables.

use std::io;
use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::fs::WritableFile;
use crate::iter::InternalIterator;
use crate::key::{ValueKind, parse_internal_key};
use crate::options::Options;
use crate::sstable::{TableBuilder, TableSummary};
use crate::version::FileMeta;

/// Writes the merged `input` into tables of about `target_file_size_bytes`,
/// keeping only the newest version of each user key, and dropping it too if
/// it is a tombstone and the output is the bottommost data for its range.
///
/// Dropping older versions is safe because the engine exposes no long-lived
/// snapshots: a read in flight keeps the input tables it started with.
/// `new_file` returns the number and handle of a fresh table file.
pub(crate) fn write_compaction_outputs(
    input: &mut dyn InternalIterator,
    bottommost: bool,
    opts: &Options,
    mut new_file: impl FnMut() -> Result<(u64, Arc<dyn WritableFile>)>,
) -> Result<Vec<FileMeta>> {
    let mut outputs = Vec::new();
    let mut current: Option<(u64, TableBuilder)> = None;
    let mut last_user_key: Option<Vec<u8>> = None;
    let io_err = |e: io::Error| EngineError::io("writing compaction output", e);
    input.seek_to_first()?;
    while input.valid() {
        let parsed = parse_internal_key(input.key())
            .ok_or_else(|| EngineError::corruption("malformed key in compaction input"))?;
        let shadowed = last_user_key.as_deref() == Some(parsed.user_key);
        if !shadowed {
            last_user_key = Some(parsed.user_key.to_vec());
            if !(bottommost && parsed.kind == ValueKind::Tombstone) {
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
                if let Some((number, builder)) = &mut current {
                    builder.add(input.key(), input.value()).map_err(io_err)?;
                    if builder.estimated_size_bytes() >= opts.target_file_size_bytes {
                        let number = *number;
                        if let Some((_, b)) = current.take() {
                            outputs.push(to_meta(number, b.finish().map_err(io_err)?));
                        }
                    }
                }
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
