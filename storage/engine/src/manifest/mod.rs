//! The manifest: a log of [`VersionEdit`]s, and `CURRENT`, which names the
//! live manifest.
//!
//! Every edit is appended and fsynced before it takes effect. A new manifest
//! (written at every open and by checkpoints) starts with a snapshot edit of
//! the whole state; `CURRENT` is switched to it atomically: write
//! `CURRENT.tmp`, fsync it, rename it over `CURRENT`, fsync the directory.

mod edit;

use std::path::Path;
use std::sync::Arc;

pub(crate) use edit::VersionEdit;

use crate::error::{EngineError, Result};
use crate::filename::{CURRENT, FileKind, current_temp_path, manifest_name, parse_file_name};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::log::{LogWriter, read_log};
use crate::version::{FileMeta, NUM_LEVELS, sort_levels};

/// The state a manifest describes, rebuilt by replaying its edits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManifestState {
    pub(crate) levels: Vec<Vec<FileMeta>>,
    pub(crate) log_number: u64,
    pub(crate) next_file_number: u64,
    pub(crate) last_seq: SeqNo,
}

impl Default for ManifestState {
    fn default() -> Self {
        ManifestState {
            levels: vec![Vec::new(); NUM_LEVELS],
            log_number: 0,
            next_file_number: 1,
            last_seq: 0,
        }
    }
}

impl ManifestState {
    /// Applies an edit; the error says why it does not fit the state.
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<(), String> {
        for &(level, number) in &edit.deleted_files {
            let files = &mut self.levels[level];
            let before = files.len();
            files.retain(|f| f.number != number);
            if files.len() == before {
                return Err(format!("edit deletes missing file {number} from L{level}"));
            }
        }
        for (level, meta) in &edit.new_files {
            if self
                .levels
                .iter()
                .flatten()
                .any(|f| f.number == meta.number)
            {
                return Err(format!("edit adds file {} twice", meta.number));
            }
            self.levels[*level].push(meta.clone());
        }
        sort_levels(&mut self.levels);
        if let Some(n) = edit.log_number {
            self.log_number = self.log_number.max(n);
        }
        if let Some(n) = edit.next_file_number {
            self.next_file_number = self.next_file_number.max(n);
        }
        if let Some(s) = edit.last_seq {
            self.last_seq = self.last_seq.max(s);
        }
        Ok(())
    }

    /// One edit that recreates this whole state.
    pub(crate) fn snapshot_edit(&self) -> VersionEdit {
        VersionEdit {
            log_number: Some(self.log_number),
            next_file_number: Some(self.next_file_number),
            last_seq: Some(self.last_seq),
            deleted_files: Vec::new(),
            new_files: self
                .levels
                .iter()
                .enumerate()
                .flat_map(|(level, files)| files.iter().map(move |f| (level, f.clone())))
                .collect(),
        }
    }
}

/// Appends edits to the live manifest.
pub(crate) struct ManifestWriter {
    log: LogWriter,
    number: u64,
}

impl ManifestWriter {
    /// Creates manifest `number` holding `snapshot`, makes it durable and
    /// points `CURRENT` at it.
    pub(crate) fn create(
        fs: &Arc<dyn FileSystem>,
        dir: &Path,
        number: u64,
        snapshot: &VersionEdit,
    ) -> Result<ManifestWriter> {
        let path = dir.join(manifest_name(number));
        let context = || format!("writing {}", path.display());
        let file = fs
            .create(&path)
            .map_err(|e| EngineError::io(context(), e))?;
        let mut log = LogWriter::new(file);
        log.add_record(&snapshot.encode())
            .map_err(|e| EngineError::io(context(), e))?;
        log.sync().map_err(|e| EngineError::io(context(), e))?;
        // Make the manifest's own directory entry durable before CURRENT
        // can name it.
        fs.sync_dir(dir)
            .map_err(|e| EngineError::io(context(), e))?;
        set_current(fs.as_ref(), dir, number)?;
        Ok(ManifestWriter { log, number })
    }

    /// Appends `edit` and fsyncs it.
    pub(crate) fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        let context = || format!("appending to {}", manifest_name(self.number));
        self.log
            .add_record(&edit.encode())
            .map_err(|e| EngineError::io(context(), e))?;
        self.log.sync().map_err(|e| EngineError::io(context(), e))
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    pub(crate) fn size_bytes(&self) -> u64 {
        self.log.len_bytes()
    }
}

/// Atomically points `CURRENT` at manifest `number`.
fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let temp = current_temp_path(dir);
    let context = || format!("switching CURRENT in {}", dir.display());
    let file = fs
        .create(&temp)
        .map_err(|e| EngineError::io(context(), e))?;
    file.append(format!("{}\n", manifest_name(number)).as_bytes())
        .map_err(|e| EngineError::io(context(), e))?;
    file.sync().map_err(|e| EngineError::io(context(), e))?;
    fs.rename(&temp, &dir.join(CURRENT))
        .map_err(|e| EngineError::io(context(), e))?;
    fs.sync_dir(dir).map_err(|e| EngineError::io(context(), e))
}

/// The manifest number `CURRENT` names, or `None` if there is no `CURRENT`.
pub(crate) fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<Option<u64>> {
    let path = dir.join(CURRENT);
    if !fs
        .exists(&path)
        .map_err(|e| EngineError::io("checking for CURRENT", e))?
    {
        return Ok(None);
    }
    let bytes = fs
        .read_all(&path)
        .map_err(|e| EngineError::io("reading CURRENT", e))?;
    let text = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|t| t.strip_suffix('\n'));
    match text.and_then(parse_file_name) {
        Some(FileKind::Manifest(n)) => Ok(Some(n)),
        _ => Err(EngineError::corruption(format!(
            "CURRENT holds {:?}",
            String::from_utf8_lossy(&bytes)
        ))),
    }
}

/// Replays manifest `number` up to its last complete edit.
pub(crate) fn replay(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<ManifestState> {
    let name = manifest_name(number);
    let bytes = fs
        .read_all(&dir.join(&name))
        .map_err(|e| EngineError::io(format!("reading {name}"), e))?;
    let mut state = ManifestState::default();
    let mut edits = 0;
    read_log(&bytes, true, &name, |payload| {
        let edit = VersionEdit::decode(payload)
            .map_err(|e| EngineError::corruption(format!("{name}: {e}")))?;
        state
            .apply(&edit)
            .map_err(|e| EngineError::corruption(format!("{name}: {e}")))?;
        edits += 1;
        Ok(())
    })?;
    if edits == 0 {
        return Err(EngineError::corruption(format!(
            "{name} holds no complete edit"
        )));
    }
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FaultFs;
    use crate::key::{ValueKind, internal_key};

    fn meta(number: u64, lo: &[u8], hi: &[u8]) -> FileMeta {
        FileMeta {
            number,
            size_bytes: 100,
            smallest: internal_key(lo, 1, ValueKind::Put),
            largest: internal_key(hi, 1, ValueKind::Put),
        }
    }

    fn setup() -> (Arc<dyn FileSystem>, FaultFs, &'static Path) {
        let fault = FaultFs::new();
        let dir = Path::new("/db");
        fault.create_dir_all(dir).expect("mkdir");
        (Arc::new(fault.clone()), fault, dir)
    }

    // Proves that a manifest replays to the state its edits describe.
    #[test]
    fn manifest_round_trips_edits() {
        let (fs, _, dir) = setup();
        let mut w = ManifestWriter::create(&fs, dir, 1, &ManifestState::default().snapshot_edit())
            .expect("create");
        let add = VersionEdit {
            new_files: vec![(0, meta(5, b"a", b"c"))],
            last_seq: Some(10),
            ..Default::default()
        };
        w.append(&add).expect("append");
        let compact = VersionEdit {
            deleted_files: vec![(0, 5)],
            new_files: vec![(1, meta(6, b"a", b"c"))],
            next_file_number: Some(7),
            ..Default::default()
        };
        w.append(&compact).expect("append");
        assert_eq!(read_current(fs.as_ref(), dir).expect("read"), Some(1));
        let state = replay(fs.as_ref(), dir, 1).expect("replay");
        assert_eq!(state.levels[0], vec![]);
        assert_eq!(state.levels[1], vec![meta(6, b"a", b"c")]);
        assert_eq!((state.next_file_number, state.last_seq), (7, 10));
    }

    // Proves that a manifest cut at every offset of its last edit recovers
    // the state before that edit, and that damage mid-log is corruption.
    #[test]
    fn manifest_recovers_last_complete_edit() {
        let (fs, fault, dir) = setup();
        let mut w = ManifestWriter::create(&fs, dir, 1, &ManifestState::default().snapshot_edit())
            .expect("create");
        w.append(&VersionEdit {
            new_files: vec![(0, meta(5, b"a", b"c"))],
            ..Default::default()
        })
        .expect("append");
        let before_last = w.size_bytes() as usize;
        w.append(&VersionEdit {
            new_files: vec![(0, meta(6, b"d", b"f"))],
            ..Default::default()
        })
        .expect("append");
        let path = dir.join(manifest_name(1));
        let full = fault.contents(&path).expect("exists");
        for cut in before_last..full.len() {
            fault.overwrite(&path, full[..cut].to_vec());
            let state = replay(fs.as_ref(), dir, 1).expect("torn tail tolerated");
            assert_eq!(state.levels[0].len(), 1, "cut at {cut}");
        }
        let mut damaged = full.clone();
        damaged[before_last - 3] ^= 1;
        fault.overwrite(&path, damaged);
        assert!(matches!(
            replay(fs.as_ref(), dir, 1),
            Err(EngineError::Corruption { .. })
        ));
    }

    // Proves that a garbled CURRENT is corruption rather than a fresh database.
    #[test]
    fn garbled_current_is_corruption() {
        let (fs, fault, dir) = setup();
        fault.overwrite(&dir.join(CURRENT), b"nonsense".to_vec());
        assert!(matches!(
            read_current(fs.as_ref(), dir),
            Err(EngineError::Corruption { .. })
        ));
    }
}
