//! A snapshot's manifest: what a complete copy of it holds.
//!
//! The snapshot thread writes it beside the checkpoint it builds; the sender
//! sends it before any file, so the receiver knows every file, its size and
//! its checksum, and the total it must find room for; the receiver stores
//! it in the staged copy only once every file matched, which is what marks
//! a staged snapshot as verified. The install reads the applied index and
//! the key count from it and checks the staged engine against them before
//! it touches the replica's own data.
//!
//! The encoding is text, one field a line (`storage/docs/format.md`), and
//! ends with a line that repeats the number of files, so that a manifest cut
//! short does not read as a smaller snapshot.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

use thiserror::Error;

/// The manifest's file name inside a snapshot directory. The engine ignores
/// names it does not know, so the checkpoint can be opened with it there.
pub const MANIFEST_FILE: &str = "SNAPSHOT";

const MAGIC: &str = "strata-snapshot 1";

/// A manifest that does not decode, or files that do not match theirs.
#[derive(Debug, Error)]
#[error("snapshot manifest: {0}")]
pub struct ManifestError(pub String);

/// One file of a snapshot: its path relative to the snapshot directory,
/// its length and the CRC-32 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    pub path: String,
    pub size: u64,
    pub crc32: u32,
}

/// What a snapshot holds: the raft index it was applied up to, how many
/// user keys the group has in it, and its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub index: u64,
    pub keys: u64,
    pub files: Vec<ManifestFile>,
}

impl Manifest {
    /// Describes the files now in `dir` (all but the manifest itself).
    pub fn build(dir: &Path, index: u64, keys: u64) -> io::Result<Manifest> {
        let mut files = Vec::new();
        for rel in super::list_files(dir)? {
            if rel == Path::new(MANIFEST_FILE) {
                continue;
            }
            let (size, crc32) = checksum(&dir.join(&rel))?;
            files.push(ManifestFile {
                path: rel.to_string_lossy().into_owned(),
                size,
                crc32,
            });
        }
        Ok(Manifest { index, keys, files })
    }

    /// The bytes of every file together.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = format!("{MAGIC}\nindex {}\nkeys {}\n", self.index, self.keys);
        for f in &self.files {
            out.push_str(&format!("file {} {:08x} {}\n", f.size, f.crc32, f.path));
        }
        out.push_str(&format!("end {}\n", self.files.len()));
        out.into_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let bad = |what: &str| ManifestError(what.to_string());
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(bad("does not start with its version line"));
        }
        let number = |name: &str, line: Option<&str>| -> Result<u64, ManifestError> {
            line.and_then(|l| l.strip_prefix(name))
                .and_then(|v| v.strip_prefix(' '))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| ManifestError(format!("no `{name}` line where expected")))
        };
        let index = number("index", lines.next())?;
        let keys = number("keys", lines.next())?;
        let mut files = Vec::new();
        loop {
            let line = lines
                .next()
                .ok_or_else(|| bad("ends without its `end` line"))?;
            if let Some(count) = line.strip_prefix("end ") {
                if count.parse::<usize>().ok() != Some(files.len()) {
                    return Err(bad("the `end` line does not count the files listed"));
                }
                break;
            }
            let mut parts = line.strip_prefix("file ").unwrap_or("").splitn(3, ' ');
            let (Some(size), Some(crc), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(ManifestError(format!("line `{line}` is not a file")));
            };
            files.push(ManifestFile {
                path: path.to_string(),
                size: size
                    .parse()
                    .map_err(|_| ManifestError(format!("size in `{line}`")))?,
                crc32: u32::from_str_radix(crc, 16)
                    .map_err(|_| ManifestError(format!("checksum in `{line}`")))?,
            });
        }
        if lines.next().is_some() {
            return Err(bad("has lines after its `end` line"));
        }
        Ok(Manifest { index, keys, files })
    }

    /// Reads the manifest stored in snapshot directory `dir`; `None` when
    /// there is none (a staged copy never verified, or not a snapshot).
    pub fn read(dir: &Path) -> Result<Option<Manifest>, ManifestError> {
        match fs::read(dir.join(MANIFEST_FILE)) {
            Ok(bytes) => Manifest::decode(&bytes).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ManifestError(format!(
                "reading it in {}: {e}",
                dir.display()
            ))),
        }
    }

    /// Stores the manifest in `dir`, durably: written under a temporary
    /// name, synced, renamed, and the directory synced, so that it is
    /// either absent or whole after a crash.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
        let mut file = fs::File::create(&tmp)?;
        io::Write::write_all(&mut file, &self.encode())?;
        file.sync_all()?;
        fs::rename(&tmp, dir.join(MANIFEST_FILE))?;
        fs::File::open(dir)?.sync_all()
    }

    /// Checks that `dir` holds every listed file with its size and checksum.
    pub fn verify(&self, dir: &Path) -> Result<(), ManifestError> {
        for f in &self.files {
            let (size, crc32) = checksum(&dir.join(&f.path))
                .map_err(|e| ManifestError(format!("{}: {e}", f.path)))?;
            if (size, crc32) != (f.size, f.crc32) {
                return Err(ManifestError(format!(
                    "{} has {size} bytes (CRC {crc32:08x}); the manifest says {} ({:08x})",
                    f.path, f.size, f.crc32
                )));
            }
        }
        Ok(())
    }
}

/// The length and CRC-32 of the file at `path`.
fn checksum(path: &Path) -> io::Result<(u64, u32)> {
    let mut file = fs::File::open(path)?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((size, crc.finalize()));
        }
        crc.update(&buf[..n]);
        size += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            index: 42,
            keys: 7,
            files: vec![
                ManifestFile {
                    path: "000003.sst".into(),
                    size: 1234,
                    crc32: 0xdead_beef,
                },
                ManifestFile {
                    path: "MANIFEST 000004".into(),
                    size: 0,
                    crc32: 0,
                },
            ],
        }
    }

    #[test]
    fn a_manifest_decodes_to_what_was_encoded() {
        // Proves: encode and decode are inverse, paths with spaces included.
        let m = sample();
        assert_eq!(Manifest::decode(&m.encode()).unwrap(), m);
        assert_eq!(m.total_bytes(), 1234);
    }

    #[test]
    fn a_manifest_cut_short_or_padded_does_not_decode() {
        // Proves: a manifest missing any of its lines (above all its last)
        // or followed by more is refused, never read as a smaller snapshot.
        let bytes = sample().encode();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for keep in 0..lines.len() {
            let cut = lines[..keep].join("\n");
            assert!(Manifest::decode(cut.as_bytes()).is_err(), "{cut:?} decoded");
        }
        let padded = format!("{text}file 1 00000000 extra\n");
        assert!(Manifest::decode(padded.as_bytes()).is_err());
    }

    #[test]
    fn verify_finds_a_missing_or_changed_file() {
        // Proves: a directory matches its manifest only with every file
        // present, at its size and with its checksum.
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a"), b"alpha").unwrap();
        fs::write(dir.path().join("b"), b"beta").unwrap();
        let m = Manifest::build(dir.path(), 5, 2).unwrap();
        m.write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(m.clone()));
        assert_eq!(m.files.len(), 2, "the manifest does not list itself");
        m.verify(dir.path()).unwrap();
        fs::write(dir.path().join("b"), b"betA").unwrap();
        assert!(m.verify(dir.path()).is_err());
        fs::remove_file(dir.path().join("b")).unwrap();
        assert!(m.verify(dir.path()).is_err());
    }
}
