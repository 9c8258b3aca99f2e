//! Certificates and keys on disk: a private key is written readable by its
//! owner alone and never replaces a file already there.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::TlsError;

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TlsError {
    let path = path.display().to_string();
    move |source| TlsError::Io { path, source }
}

/// Writes `contents` to a new file `path` with `mode`; a file already there
/// is an error and stays as it was.
pub(crate) fn write_new(path: &Path, contents: &str, mode: u32) -> Result<(), TlsError> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => TlsError::Exists {
                path: path.display().to_string(),
            },
            _ => io(path)(e),
        })?;
    file.write_all(contents.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io(path))
}

/// Fails if any of `paths` exists, so that a pair of files is written whole
/// or not at all.
pub(crate) fn none_exist(paths: &[&Path]) -> Result<(), TlsError> {
    for path in paths {
        if path.exists() {
            return Err(TlsError::Exists {
                path: path.display().to_string(),
            });
        }
    }
    Ok(())
}

pub(crate) fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(io(path))
}
