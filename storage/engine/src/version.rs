//! The level layout: which table files make up the database.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::key::{compare_internal_keys, user_key};
use crate::manifest::VersionEdit;
use crate::sstable::Table;

/// Number of levels. L0 holds flushed tables that may overlap; every deeper
/// level holds sorted, non-overlapping tables.
pub(crate) const NUM_LEVELS: usize = 7;

/// What the manifest records about a table file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileMeta {
    pub(crate) number: u64,
    pub(crate) size_bytes: u64,
    /// Smallest and largest internal keys in the file.
    pub(crate) smallest: Vec<u8>,
    pub(crate) largest: Vec<u8>,
}

impl FileMeta {
    /// Whether the file may hold keys in the user-key range `[start, end]`.
    pub(crate) fn overlaps(&self, start: &[u8], end: &[u8]) -> bool {
        user_key(&self.largest) >= start && user_key(&self.smallest) <= end
    }
}

/// A table file together with its open reader.
#[derive(Debug)]
pub(crate) struct TableFile {
    pub(crate) meta: FileMeta,
    pub(crate) table: Arc<Table>,
}

/// An immutable picture of the level layout. L0 is ordered newest first
/// (highest file number first); deeper levels by smallest key.
#[derive(Clone, Debug)]
pub(crate) struct Version {
    pub(crate) levels: Vec<Vec<Arc<TableFile>>>,
}

impl Default for Version {
    fn default() -> Self {
        Version {
            levels: vec![Vec::new(); NUM_LEVELS],
        }
    }
}

impl Version {
    /// Applies `edit`, opening each added file with `open`.
    pub(crate) fn apply(
        &self,
        edit: &VersionEdit,
        mut open: impl FnMut(&FileMeta) -> Result<Arc<Table>>,
    ) -> Result<Version> {
        let mut levels = self.levels.clone();
        for &(level, number) in &edit.deleted_files {
            let files = levels.get_mut(level).ok_or_else(|| bad_level(level))?;
            let before = files.len();
            files.retain(|f| f.meta.number != number);
            if files.len() == before {
                return Err(EngineError::corruption(format!(
                    "edit deletes missing file {number} from L{level}"
                )));
            }
        }
        for (level, meta) in &edit.new_files {
            let table = open(meta)?;
            levels
                .get_mut(*level)
                .ok_or_else(|| bad_level(*level))?
                .push(Arc::new(TableFile {
                    meta: meta.clone(),
                    table,
                }));
        }
        sort_levels(&mut levels);
        let version = Version { levels };
        version.check_invariants()?;
        Ok(version)
    }

    /// Metadata of every level, for compaction picking and the manifest.
    pub(crate) fn layout(&self) -> Vec<Vec<FileMeta>> {
        self.levels
            .iter()
            .map(|files| files.iter().map(|f| f.meta.clone()).collect())
            .collect()
    }

    /// Numbers of every live table file.
    pub(crate) fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.meta.number)
    }

    /// Levels below L0 must be sorted and non-overlapping.
    fn check_invariants(&self) -> Result<()> {
        for (level, files) in self.levels.iter().enumerate().skip(1) {
            for pair in files.windows(2) {
                if user_key(&pair[0].meta.largest) >= user_key(&pair[1].meta.smallest) {
                    return Err(EngineError::corruption(format!(
                        "L{level} files {} and {} overlap",
                        pair[0].meta.number, pair[1].meta.number
                    )));
                }
            }
        }
        Ok(())
    }
}

fn bad_level(level: usize) -> EngineError {
    EngineError::corruption(format!("level {level} is out of range"))
}

/// Orders L0 newest first and deeper levels by smallest key.
pub(crate) fn sort_levels<T: AsRef<FileMeta>>(levels: &mut [Vec<T>]) {
    if let Some(l0) = levels.first_mut() {
        l0.sort_by_key(|f| std::cmp::Reverse(f.as_ref().number));
    }
    for files in levels.iter_mut().skip(1) {
        files.sort_by(|a, b| compare_internal_keys(&a.as_ref().smallest, &b.as_ref().smallest));
    }
}

impl AsRef<FileMeta> for FileMeta {
    fn as_ref(&self) -> &FileMeta {
        self
    }
}

impl AsRef<FileMeta> for Arc<TableFile> {
    fn as_ref(&self) -> &FileMeta {
        &self.meta
    }
}

/// Index of the first file in a sorted level whose largest key is `>= ikey`.
pub(crate) fn find_file(files: &[Arc<TableFile>], ikey: &[u8]) -> usize {
    files.partition_point(|f| compare_internal_keys(&f.meta.largest, ikey) == Ordering::Less)
}
