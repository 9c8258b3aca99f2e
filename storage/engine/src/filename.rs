//! Names of the files in an engine directory.

use std::path::{Path, PathBuf};

/// The kinds of file the engine creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Wal(u64),
    Table(u64),
    Manifest(u64),
    Current,
    Lock,
    Temp,
}

pub(crate) const CURRENT: &str = "CURRENT";
pub(crate) const LOCK: &str = "LOCK";
const TEMP_SUFFIX: &str = ".tmp";

pub(crate) fn wal_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.wal"))
}

pub(crate) fn table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

pub(crate) fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

pub(crate) fn current_temp_path(dir: &Path) -> PathBuf {
    dir.join(format!("{CURRENT}{TEMP_SUFFIX}"))
}

/// Classifies a file name; `None` for files the engine does not own.
pub(crate) fn parse_file_name(name: &str) -> Option<FileKind> {
    if name == CURRENT {
        return Some(FileKind::Current);
    }
    if name == LOCK {
        return Some(FileKind::Lock);
    }
    if name.ends_with(TEMP_SUFFIX) {
        return Some(FileKind::Temp);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileKind::Manifest);
    }
    if let Some(n) = name.strip_suffix(".wal") {
        return n.parse().ok().map(FileKind::Wal);
    }
    if let Some(n) = name.strip_suffix(".sst") {
        return n.parse().ok().map(FileKind::Table);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that every generated name parses back to its kind and number.
    #[test]
    fn generated_names_parse_back() {
        let dir = Path::new("/db");
        let name = |p: PathBuf| {
            p.file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
                .unwrap_or_default()
        };
        assert_eq!(
            parse_file_name(&name(wal_path(dir, 7))),
            Some(FileKind::Wal(7))
        );
        assert_eq!(
            parse_file_name(&name(table_path(dir, 1234567))),
            Some(FileKind::Table(1234567))
        );
        assert_eq!(
            parse_file_name(&manifest_name(3)),
            Some(FileKind::Manifest(3))
        );
        assert_eq!(
            parse_file_name(&name(current_temp_path(dir))),
            Some(FileKind::Temp)
        );
        assert_eq!(parse_file_name("CURRENT"), Some(FileKind::Current));
        assert_eq!(parse_file_name("notes.txt"), None);
    }
}
