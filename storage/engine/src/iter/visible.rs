//! Turns a merged stream of versions into what a user sees at a read point.

use super::{InternalIterator, MergeIterator};
use crate::error::{EngineError, Result};
use crate::key::{SeqNo, ValueKind, lookup_key, parse_internal_key};

/// Yields, for each user key, the newest version with `seq <= read point`,
/// skipping keys whose newest visible version is a tombstone.
pub(crate) struct VisibleIter {
    inner: MergeIterator,
    read_seq: SeqNo,
    /// User key of the current entry.
    user_key: Vec<u8>,
    valid: bool,
}

impl VisibleIter {
    pub(crate) fn new(inner: MergeIterator, read_seq: SeqNo) -> VisibleIter {
        VisibleIter {
            inner,
            read_seq,
            user_key: Vec::new(),
            valid: false,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key.
    pub(crate) fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        &self.user_key
    }

    pub(crate) fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        self.inner.value()
    }

    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        self.inner.seek_to_first()?;
        self.settle(None)
    }

    /// Moves to the first visible user key `>= user_key`.
    pub(crate) fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        self.inner.seek(&lookup_key(user_key, self.read_seq))?;
        self.settle(None)
    }

    pub(crate) fn next(&mut self) -> Result<()> {
        debug_assert!(self.valid);
        let skip = self.user_key.clone();
        self.settle(Some(&skip))
    }

    /// Advances `inner` to the newest visible version of the next user key
    /// (other than `skip`) whose newest visible version is a put.
    fn settle(&mut self, skip: Option<&[u8]>) -> Result<()> {
        self.valid = false;
        let mut hidden: Option<Vec<u8>> = skip.map(<[u8]>::to_vec);
        while self.inner.valid() {
            let parsed = parse_internal_key(self.inner.key())
                .ok_or_else(|| EngineError::corruption("malformed internal key"))?;
            let shadowed = hidden.as_deref() == Some(parsed.user_key);
            if shadowed || parsed.seq > self.read_seq {
                self.inner.next()?;
                continue;
            }
            match parsed.kind {
                ValueKind::Put => {
                    self.user_key.clear();
                    self.user_key.extend_from_slice(parsed.user_key);
                    self.valid = true;
                    return Ok(());
                }
                ValueKind::Tombstone => {
                    hidden = Some(parsed.user_key.to_vec());
                    self.inner.next()?;
                }
            }
        }
        Ok(())
    }
}
