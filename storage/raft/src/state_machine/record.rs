//! How a user key's value is stored: behind a header naming the raft index
//! that created the key, the one that last changed it, and the lease it is
//! attached to (0: none).
//!
//! ```text
//! format u8 (=1) | create_index u64 | mod_index u64 | lease u64 | value
//! ```
//! Integers are little-endian. A group's values are all in one format,
//! named by its `value_format` metadata item; data written before the
//! header existed has no such item, and the node refuses to start on it
//! (`StateMachine::check_value_format`).

use strata_engine::EngineError;

/// The format this build writes and reads.
pub(crate) const FORMAT: u8 = 1;
const HEADER_BYTES: usize = 25;

/// A user key's value with the raft indexes that created and last changed
/// it. Both are the same on every replica, so a comparison on them (a
/// transaction's compare) decides the same everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Versioned {
    pub value: Vec<u8>,
    /// The index of the entry that created the key (the first put after it
    /// did not exist).
    pub create_index: u64,
    /// The index of the entry that last put it.
    pub mod_index: u64,
    /// The lease the key is attached to; 0 for none.
    pub lease: u64,
}

impl Versioned {
    /// The stored form.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.value.len());
        out.push(FORMAT);
        out.extend_from_slice(&self.create_index.to_le_bytes());
        out.extend_from_slice(&self.mod_index.to_le_bytes());
        out.extend_from_slice(&self.lease.to_le_bytes());
        out.extend_from_slice(&self.value);
        out
    }

    /// Reads a stored value of user key `key` (named in the error).
    pub(crate) fn decode(key: &[u8], mut stored: Vec<u8>) -> Result<Versioned, EngineError> {
        if stored.len() < HEADER_BYTES || stored[0] != FORMAT {
            return Err(EngineError::Corruption {
                context: format!(
                    "the value of key {:?} ({} bytes) has no format {FORMAT} header",
                    String::from_utf8_lossy(key),
                    stored.len()
                ),
            });
        }
        let field = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&stored[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let (create_index, mod_index, lease) = (field(1), field(9), field(17));
        stored.drain(..HEADER_BYTES);
        Ok(Versioned {
            value: stored,
            create_index,
            mod_index,
            lease,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_value_reads_back_and_a_headerless_one_is_refused() {
        let v = Versioned {
            value: b"hello".to_vec(),
            create_index: 3,
            mod_index: 9,
            lease: 0,
        };
        assert_eq!(Versioned::decode(b"k", v.encode()).unwrap(), v);
        let err = Versioned::decode(b"k", b"hello".to_vec()).unwrap_err();
        assert!(err.to_string().contains("no format 1 header"), "{err}");
        let empty = Versioned::default();
        assert_eq!(Versioned::decode(b"k", empty.encode()).unwrap(), empty);
    }
}
