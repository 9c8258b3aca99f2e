//! [`FileSystem`] for [`FaultFs`], and its file handles.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FaultFs, HeldEntry, HeldSync, Node, State, is_root, not_found};
use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

struct FaultWritable {
    fs: FaultFs,
    node: Node,
}

impl WritableFile for FaultWritable {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        self.fs.with_state(|state| {
            if let Some(kind) = state.fail_next_write.take() {
                return Err(io::Error::new(kind, "injected write failure"));
            }
            if state.no_space {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "injected: no space left on device",
                ));
            }
            let mut content = self.node.lock();
            if state.held.is_some() && content.len_at_hold.is_none() {
                content.len_at_hold = Some(content.data.len());
                state.appended_while_held.push(Arc::clone(&self.node));
            }
            content.data.extend_from_slice(data);
            Ok(())
        })
    }

    fn sync(&self) -> io::Result<()> {
        self.fs.with_state(|state| {
            if let Some(kind) = state.take_sync_failure() {
                return Err(io::Error::new(kind, "injected fsync failure"));
            }
            let mut content = self.node.lock();
            state.sync_count += 1;
            // The allocation is durable at once even while syncs are held:
            // a crash finds zeros there either way, only the length differs.
            content.allocated_synced = content.allocated;
            if state.hold(HeldSync::File(Arc::clone(&self.node), content.data.len())) {
                return Ok(());
            }
            content.synced_len = content.data.len();
            content.durable_before_truncate = None;
            Ok(())
        })
    }

    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        self.fs.with_state(|state| {
            if state.no_space {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "injected: no space left on device",
                ));
            }
            let len = usize::try_from(len_bytes).map_err(|_| io::Error::other("too large"))?;
            let mut content = self.node.lock();
            content.allocated = content.allocated.max(len);
            Ok(())
        })
    }

    fn truncate(&self, len_bytes: u64) -> io::Result<()> {
        self.fs.with_state(|state| {
            if let Some(kind) = state.fail_next_write.take() {
                return Err(io::Error::new(kind, "injected truncate failure"));
            }
            let mut content = self.node.lock();
            let len = usize::try_from(len_bytes)
                .ok()
                .filter(|&len| len <= content.len())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "cannot truncate a file of {} bytes to {len_bytes}",
                            content.len()
                        ),
                    )
                })?;
            if len == content.data.len() {
                // Only allocated zeros go: no appended byte changes, so a
                // held sync still covers what it saw.
                content.allocated = 0;
                return Ok(());
            }
            // A held sync records a length, not bytes: a truncation
            // before its release would make it cover bytes it never saw.
            if state.held.is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "truncating while syncs are held is not modelled",
                ));
            }
            if len > content.data.len() {
                // Within the allocated zeros: the file gets shorter, and
                // later appends go after the cut, zeros before them.
                content.data.resize(len, 0);
                content.allocated = 0;
                return Ok(());
            }
            if len < content.synced_len {
                if content.durable_before_truncate.is_none() {
                    let durable = content.data[..content.synced_len].to_vec();
                    content.durable_before_truncate = Some(durable);
                }
                content.synced_len = len;
            }
            content.data.truncate(len);
            content.allocated = 0;
            Ok(())
        })
    }
}

struct FaultReadable {
    node: Node,
    len: u64,
}

impl RandomAccessFile for FaultReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let content = self.node.lock();
        let start =
            usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        let end = start.saturating_add(buf.len());
        if end > content.len() {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        // Past what was appended, allocated bytes read as zeros.
        let appended = content.data.len().clamp(start, end);
        buf[..appended - start].copy_from_slice(&content.data[start..appended]);
        buf[appended - start..].fill(0);
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        self.len
    }
}

struct FaultLock {
    fs: FaultFs,
    path: PathBuf,
}

impl Drop for FaultLock {
    fn drop(&mut self) {
        self.fs.state.lock().locked.remove(&self.path);
    }
}

fn require_parent(state: &State, path: &Path) -> io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new(""));
    if state.dirs.contains(parent) {
        Ok(())
    } else {
        Err(not_found(parent))
    }
}

impl FileSystem for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.with_state(|state| {
            for ancestor in dir.ancestors() {
                state.dirs.insert(ancestor.to_path_buf());
            }
            Ok(())
        })
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        let node = self.with_state(|state| {
            require_parent(state, path)?;
            let node = Node::default();
            state.live.insert(path.to_path_buf(), Arc::clone(&node));
            Ok(node)
        })?;
        Ok(Arc::new(FaultWritable {
            fs: self.clone(),
            node,
        }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        let node = self.with_state(|state| {
            state
                .live
                .get(path)
                .map(Arc::clone)
                .ok_or_else(|| not_found(path))
        })?;
        Ok(Arc::new(FaultWritable {
            fs: self.clone(),
            node,
        }))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.with_state(|state| {
            let node = state.live.get(path).ok_or_else(|| not_found(path))?;
            let len = node.lock().len() as u64;
            Ok(Arc::new(FaultReadable {
                node: Arc::clone(node),
                len,
            }) as Arc<dyn RandomAccessFile>)
        })
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.with_state(|state| {
            if !state.dirs.contains(dir) {
                return Err(not_found(dir));
            }
            let files = state.live.keys().filter(|p| p.parent() == Some(dir));
            let dirs = state.dirs.iter().filter(|p| p.parent() == Some(dir));
            Ok(files
                .chain(dirs)
                .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
                .collect())
        })
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.with_state(|state| Ok(state.live.contains_key(path) || state.dirs.contains(path)))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.with_state(|state| {
            state
                .live
                .remove(path)
                .map(drop)
                .ok_or_else(|| not_found(path))
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.with_state(|state| {
            require_parent(state, to)?;
            let node = state.live.remove(from).ok_or_else(|| not_found(from))?;
            state.live.insert(to.to_path_buf(), node);
            Ok(())
        })
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.with_state(|state| {
            if state.live.contains_key(to) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", to.display()),
                ));
            }
            require_parent(state, to)?;
            let node = Arc::clone(state.live.get(from).ok_or_else(|| not_found(from))?);
            state.live.insert(to.to_path_buf(), node);
            Ok(())
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.with_state(|state| {
            if !state.dirs.contains(dir) {
                return Err(not_found(dir));
            }
            if let Some(kind) = state.take_sync_failure() {
                return Err(io::Error::new(kind, "injected directory fsync failure"));
            }
            let inside = |p: &Path| p.parent() == Some(dir);
            let files: Vec<_> = state
                .live
                .iter()
                .filter(|(p, _)| inside(p))
                .map(|(p, n)| (p.clone(), Arc::clone(n)))
                .collect();
            let subdirs: Vec<_> = state
                .dirs
                .iter()
                .filter(|p| inside(p) && !is_root(p))
                .cloned()
                .collect();
            state.sync_count += 1;
            if state.held.is_none() {
                state.make_dir_durable(dir, files, subdirs);
                return Ok(());
            }
            let durable: Vec<_> = state
                .durable
                .keys()
                .filter(|p| inside(p) && !state.live.contains_key(*p))
                .cloned()
                .collect();
            let mut entries: Vec<HeldEntry> = files
                .into_iter()
                .map(|(path, node)| HeldEntry {
                    durable: state.durable.get(&path).cloned(),
                    live: Some(node),
                    path,
                })
                .collect();
            entries.extend(durable.into_iter().map(|path| HeldEntry {
                durable: state.durable.get(&path).cloned(),
                live: None,
                path,
            }));
            state.hold(HeldSync::Dir { entries, subdirs });
            Ok(())
        })
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        self.with_state(|state| {
            if !state.locked.insert(path.to_path_buf()) {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked", path.display()),
                ));
            }
            Ok(())
        })?;
        Ok(Box::new(FaultLock {
            fs: self.clone(),
            path: path.to_path_buf(),
        }))
    }
}
