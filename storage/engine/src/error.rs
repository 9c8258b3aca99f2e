//! The engine's error type.

use std::io;

/// Everything that can go wrong in the engine.
///
/// Corruption (bad checksums, impossible lengths) is deliberately distinct
/// from I/O failure, and "the disk is full" is distinct from both so that
/// operators can tell the cases apart.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// An I/O call failed.
    #[error("I/O error while {context}: {source}")]
    Io {
        /// What the engine was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Data read back from disk is not what was written.
    #[error("corruption: {context}")]
    Corruption {
        /// Which file and what was wrong.
        context: String,
    },
    /// An earlier write or fsync failed; the engine refuses writes until it
    /// is reopened, because it can no longer tell what reached the disk.
    #[error("engine refuses writes after an earlier failure ({reason}); reopen it")]
    Poisoned {
        /// The failure that poisoned the engine.
        reason: String,
    },
    /// The device is full (ENOSPC). Like any write failure it poisons the
    /// engine; `health()` keeps reporting it.
    #[error("no space left on device while {context}")]
    NoSpace {
        /// What the engine was doing.
        context: String,
    },
    /// The caller passed something the engine cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl EngineError {
    /// Wraps an I/O error, mapping "storage full" to [`EngineError::NoSpace`].
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> EngineError {
        let context = context.into();
        if strata_fs::is_no_space(&source) {
            EngineError::NoSpace {
                context: format!("{context}: {source}"),
            }
        } else {
            EngineError::Io { context, source }
        }
    }

    /// Whether the device was full (ENOSPC): the one failure that goes away
    /// by itself once space is freed.
    pub fn is_no_space(&self) -> bool {
        matches!(self, EngineError::NoSpace { .. })
    }

    /// Builds a corruption error.
    pub(crate) fn corruption(context: impl Into<String>) -> EngineError {
        EngineError::Corruption {
            context: context.into(),
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
