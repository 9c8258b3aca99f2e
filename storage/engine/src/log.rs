//! The engine's use of the shared record framing (`strata_fs::log`): a
//! writer that appends one record per call, and a reader that reports
//! damage as engine corruption naming the file.

use std::io;
use std::sync::Arc;

use strata_fs::log::{LogEnd, LogReader, encode_record};

use crate::error::{EngineError, Result};
use crate::fs::WritableFile;

/// Appends records to a file.
pub(crate) struct LogWriter {
    file: Arc<dyn WritableFile>,
    /// Bytes appended so far (the offset of the next record).
    len_bytes: u64,
    scratch: Vec<u8>,
}

impl LogWriter {
    pub(crate) fn new(file: Arc<dyn WritableFile>) -> LogWriter {
        LogWriter {
            file,
            len_bytes: 0,
            scratch: Vec::new(),
        }
    }

    /// Appends one record with a single write call, so a record is never
    /// split between two writes. Returns the file length after the record.
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> io::Result<u64> {
        if u32::try_from(payload.len()).is_err() {
            return Err(io::Error::other("log record too large"));
        }
        self.scratch.clear();
        encode_record(&mut self.scratch, payload);
        self.file.append(&self.scratch)?;
        self.len_bytes += self.scratch.len() as u64;
        if self.scratch.capacity() > 1 << 20 {
            // Do not keep a huge batch's buffer alive forever.
            self.scratch = Vec::new();
        }
        Ok(self.len_bytes)
    }

    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync()
    }

    pub(crate) fn file(&self) -> &Arc<dyn WritableFile> {
        &self.file
    }

    pub(crate) fn len_bytes(&self) -> u64 {
        self.len_bytes
    }
}

/// Calls `visit` on each record payload of the log in `bytes`.
///
/// A torn tail is accepted when `tolerate_torn_tail` (the newest log
/// segment, the manifest); any other damage is [`EngineError::Corruption`].
/// `name` identifies the log in errors.
pub(crate) fn read_log(
    bytes: &[u8],
    tolerate_torn_tail: bool,
    name: &str,
    mut visit: impl FnMut(&[u8]) -> Result<()>,
) -> Result<LogEnd> {
    let mut reader = LogReader::new(bytes, tolerate_torn_tail);
    for record in &mut reader {
        let record = record.map_err(|e| EngineError::corruption(format!("{name}: {e}")))?;
        visit(record.payload)?;
    }
    Ok(reader
        .end()
        .expect("a log read without corruption has an end"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fs::{FaultFs, FileSystem};

    // Proves that what the writer appends the reader returns, that the
    // writer tracks the file length, and that damage in a log whose torn
    // tail is not tolerated is engine corruption naming the log.
    #[test]
    fn writer_output_reads_back_and_damage_names_the_log() {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/d")).expect("mkdir");
        let mut w = LogWriter::new(fs.create(Path::new("/d/log")).expect("create"));
        let first_end = w.add_record(b"one").expect("append");
        assert_eq!(w.add_record(b"").expect("append"), first_end + 12);
        assert_eq!(w.len_bytes(), first_end + 12);
        let mut bytes = fs.contents(Path::new("/d/log")).expect("file exists");
        let mut seen = Vec::new();
        let end = read_log(&bytes, false, "test.log", |p| {
            seen.push(p.to_vec());
            Ok(())
        })
        .expect("intact");
        assert_eq!(seen, vec![b"one".to_vec(), Vec::new()]);
        assert!(!end.torn_tail);

        bytes.truncate(bytes.len() - 1);
        let err = read_log(&bytes, false, "test.log", |_| Ok(())).expect_err("damaged");
        assert!(
            matches!(&err, EngineError::Corruption { context } if context.starts_with("test.log: ")),
            "{err}"
        );
    }
}
