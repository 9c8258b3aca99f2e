//! Routes raft-rs's `slog` records into `tracing`.

use slog::{Drain, Level, OwnedKVList, Record};

struct TracingDrain;

impl Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record<'_>, _values: &OwnedKVList) -> Result<(), slog::Never> {
        let msg = record.msg();
        match record.level() {
            Level::Critical | Level::Error => tracing::error!(target: "raft", "{msg}"),
            Level::Warning => tracing::warn!(target: "raft", "{msg}"),
            Level::Info => tracing::info!(target: "raft", "{msg}"),
            Level::Debug | Level::Trace => tracing::debug!(target: "raft", "{msg}"),
        }
        Ok(())
    }
}

/// A logger for raft-rs tagged with the peer's id.
pub fn raft_logger(id: u64) -> slog::Logger {
    slog::Logger::root(TracingDrain.fuse(), slog::o!("peer" => id))
}
