//! The thread failure policy: a panic on a peer's raft or snapshot thread
//! ends the process.

/// Runs `f`; a panic in it ends the process. A replica whose raft thread
/// died must not keep a port open that looks alive but never answers.
pub(crate) fn fail_stop(what: &str, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        tracing::error!("{what} thread panicked; aborting the process");
        std::process::abort();
    }
}
