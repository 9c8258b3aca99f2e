//! Who a member is, kept apart from what it holds: an incarnation, drawn
//! at random when its raft log is created, and whether it is proven yet.
//!
//! Raft knows members by id, and a member whose disk was emptied or
//! replaced comes back under its old id holding nothing, while the group
//! may still count on entries it acknowledged before. The incarnation is
//! how the others tell the two lives apart (it travels with every batch of
//! raft messages, see [`crate::stamp`]); *proven* is how the member itself
//! knows that it may vote. A member whose log was created empty is not
//! proven until a leader vouches that it holds everything it could have
//! acknowledged in an earlier life (`driver/vouching.rs`); from then on it
//! is, across restarts.
//!
//! The file lives beside the raft log's segments (which ignore it), so
//! whatever empties the log empties it too. A log that already held
//! records when the file was first missing is one its member kept: that
//! member is proven.
//!
//! ```text
//! strata-identity 1
//! incarnation <16 hex digits>
//! proven <0|1>
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_fs::FileSystem;

use crate::error::LogError;

const FILE: &str = "identity";
const HEADER: &str = "strata-identity 1";

/// A member's incarnation and whether it is proven, as stored.
#[derive(Debug)]
pub struct Identity {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    incarnation: u64,
    proven: bool,
}

impl Identity {
    /// Reads the identity stored in `dir` (the raft log's directory), or
    /// makes one: unproven when the log was created empty now
    /// (`log_is_new`), proven when it holds what an earlier run kept.
    pub fn open(fs: Arc<dyn FileSystem>, dir: &Path, log_is_new: bool) -> Result<Self, LogError> {
        let path = dir.join(FILE);
        match fs.read_all(&path) {
            Ok(bytes) => {
                let (incarnation, proven) = parse(&bytes).ok_or_else(|| LogError::Corruption {
                    path: path.clone(),
                    offset: 0,
                    reason: "the identity file does not parse".into(),
                })?;
                Ok(Identity {
                    fs,
                    dir: dir.to_path_buf(),
                    incarnation,
                    proven,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut identity = Identity {
                    fs,
                    dir: dir.to_path_buf(),
                    // Never 0, which on the wire means "unknown".
                    incarnation: rand::random::<u64>().max(1),
                    proven: !log_is_new,
                };
                identity.store().map_err(|e| LogError::io(&path, e))?;
                Ok(identity)
            }
            Err(e) => Err(LogError::io(&path, e)),
        }
    }

    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    pub fn is_proven(&self) -> bool {
        self.proven
    }

    /// Records, durably, that this member holds everything it
    /// acknowledged in any earlier life.
    pub fn prove(&mut self) -> Result<(), LogError> {
        if self.proven {
            return Ok(());
        }
        self.proven = true;
        self.store()
            .map_err(|e| LogError::io(self.dir.join(FILE), e))
    }

    /// Writes the file whole under a temporary name, syncs it, renames it
    /// over the old one and syncs the directory.
    fn store(&mut self) -> io::Result<()> {
        let text = format!(
            "{HEADER}\nincarnation {:016x}\nproven {}\n",
            self.incarnation,
            u8::from(self.proven)
        );
        let tmp = self.dir.join(format!("{FILE}.tmp"));
        let file = self.fs.create(&tmp)?;
        file.append(text.as_bytes())?;
        file.sync()?;
        drop(file);
        self.fs.rename(&tmp, &self.dir.join(FILE))?;
        self.fs.sync_dir(&self.dir)
    }
}

fn parse(bytes: &[u8]) -> Option<(u64, bool)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let incarnation = lines.next()?.strip_prefix("incarnation ")?;
    let incarnation = u64::from_str_radix(incarnation, 16)
        .ok()
        .filter(|&i| i != 0)?;
    let proven = match lines.next()?.strip_prefix("proven ")? {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    lines.next().is_none().then_some((incarnation, proven))
}

#[cfg(test)]
mod tests {
    use strata_fs::FaultFs;

    use super::*;

    fn empty_fs() -> (FaultFs, Arc<dyn FileSystem>) {
        let fs = FaultFs::new();
        fs.create_dir_durable(Path::new("/raft")).expect("dir");
        (fs.clone(), Arc::new(fs))
    }

    #[test]
    fn a_new_log_is_unproven_until_proven_and_stays_proven() {
        let (_, fs) = empty_fs();
        let dir = Path::new("/raft");
        let mut first = Identity::open(fs.clone(), dir, true).expect("open");
        assert!(!first.is_proven());
        let again = Identity::open(fs.clone(), dir, false).expect("reopen");
        assert_eq!(again.incarnation(), first.incarnation());
        assert!(!again.is_proven(), "an existing file is what it says");
        first.prove().expect("prove");
        let again = Identity::open(fs, dir, false).expect("reopen");
        assert_eq!(again.incarnation(), first.incarnation());
        assert!(again.is_proven());
    }

    #[test]
    fn a_log_kept_from_before_the_file_existed_is_proven() {
        let (_, fs) = empty_fs();
        let identity = Identity::open(fs, Path::new("/raft"), false).expect("open");
        assert!(identity.is_proven());
        assert_ne!(identity.incarnation(), 0);
    }

    #[test]
    fn an_emptied_directory_is_a_new_incarnation() {
        let (_, fs) = empty_fs();
        let old = Identity::open(fs, Path::new("/raft"), true).expect("open");
        let (_, fs) = empty_fs();
        let new = Identity::open(fs, Path::new("/raft"), true).expect("open");
        assert_ne!(old.incarnation(), new.incarnation());
        assert!(!new.is_proven());
    }

    #[test]
    fn proving_survives_a_crash_once_it_returned() {
        let (fault, fs) = empty_fs();
        let mut identity = Identity::open(fs, Path::new("/raft"), true).expect("open");
        identity.prove().expect("prove");
        let after: Arc<dyn FileSystem> = Arc::new(fault.crash());
        let again = Identity::open(after, Path::new("/raft"), false).expect("reopen");
        assert!(again.is_proven());
        assert_eq!(again.incarnation(), identity.incarnation());
    }

    #[test]
    fn a_damaged_file_is_refused() {
        let (_, fs) = empty_fs();
        let dir = Path::new("/raft");
        for bad in [
            &b"strata-identity 1\nincarnation zz\nproven 0\n"[..],
            b"strata-identity 1\nincarnation 0000000000000000\nproven 1\n",
            b"strata-identity 1\nincarnation 00000000000000ab\nproven 2\n",
            b"strata-identity 1\nincarnation 00000000000000ab\n",
            b"",
        ] {
            let f = fs.create(&dir.join(FILE)).expect("create");
            f.append(bad).expect("write");
            f.sync().expect("sync");
            let err = Identity::open(fs.clone(), dir, false).expect_err("refused");
            assert!(err.to_string().contains("identity"), "{err}");
        }
    }
}
