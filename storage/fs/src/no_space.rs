//! The one test for "the device is full", shared by the engine and the
//! raft log.

use std::io;

/// Whether `err` says the device is full (ENOSPC): the one storage failure
/// that goes away by itself once space is freed, so callers report it apart
/// from other I/O errors.
///
/// The standard library maps the platform's ENOSPC to
/// [`io::ErrorKind::StorageFull`], and [`FaultFs`](crate::FaultFs) injects
/// that kind, so the kind alone decides.
pub fn is_no_space(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::StorageFull
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that the operating system's ENOSPC (28 on Linux) is recognised
    // through the error kind std derives from it, and that other errors are not.
    #[cfg(target_os = "linux")]
    #[test]
    fn os_enospc_is_no_space() {
        assert!(is_no_space(&io::Error::from_raw_os_error(28)));
        assert!(!is_no_space(&io::Error::from_raw_os_error(5)));
    }

    // Proves that an error built from the kind (as FaultFs injects it) is
    // no space, and that an unrelated kind is not.
    #[test]
    fn storage_full_kind_is_no_space() {
        assert!(is_no_space(&io::Error::new(
            io::ErrorKind::StorageFull,
            "full"
        )));
        assert!(!is_no_space(&io::Error::other("something else")));
    }
}
