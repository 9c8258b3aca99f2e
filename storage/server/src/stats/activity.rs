//! The engine's latest background work (flushes, compactions, stalls),
//! kept for the stats: the counters say how much, these say what and when.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use strata_engine::EngineEvent;
use strata_proto::v1::EngineActivity;
use strata_proto::v1::engine_activity::Kind;

/// How many pieces of work are kept; older ones fall off.
pub const KEPT: usize = 64;

/// A bounded list of the engine's latest background work, oldest first.
#[derive(Default)]
pub struct ActivityLog {
    recent: Mutex<VecDeque<EngineActivity>>,
}

impl ActivityLog {
    /// Records `event` as it is published (a flush's start is not kept:
    /// its end says all).
    pub fn record(&self, event: &EngineEvent) {
        if let Some(a) = activity(event, now_ms()) {
            let mut recent = self.recent.lock();
            if recent.len() == KEPT {
                recent.pop_front();
            }
            recent.push_back(a);
        }
    }

    /// What is kept, oldest first.
    pub fn recent(&self) -> Vec<EngineActivity> {
        self.recent.lock().iter().cloned().collect()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn activity(event: &EngineEvent, at_ms: u64) -> Option<EngineActivity> {
    let mut a = EngineActivity {
        at_ms,
        ..Default::default()
    };
    match *event {
        EngineEvent::FlushStarted { .. } => return None,
        EngineEvent::FlushFinished {
            bytes_out,
            duration,
            ..
        } => {
            a.set_kind(Kind::Flush);
            a.files_out = 1;
            a.bytes_out = bytes_out;
            a.duration_us = micros(duration);
        }
        EngineEvent::CompactionStarted {
            level,
            output_level,
            files_in,
            bytes_in,
        } => {
            a.set_kind(Kind::CompactionStarted);
            a.level = small(level);
            a.output_level = small(output_level);
            a.files_in = small(files_in);
            a.bytes_in = bytes_in;
        }
        EngineEvent::CompactionFinished {
            level,
            output_level,
            files_in,
            bytes_in,
            files_out,
            bytes_out,
            trivial_move,
            duration,
        } => {
            a.set_kind(Kind::Compaction);
            a.level = small(level);
            a.output_level = small(output_level);
            a.files_in = small(files_in);
            a.bytes_in = bytes_in;
            a.files_out = small(files_out);
            a.bytes_out = bytes_out;
            a.trivial_move = trivial_move;
            a.duration_us = micros(duration);
        }
        EngineEvent::WriteStalled { stopped, duration } => {
            a.set_kind(Kind::Stall);
            a.stopped = stopped;
            a.duration_us = micros(duration);
        }
    }
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_work_in_order_and_no_flush_starts() {
        // Proves the list is bounded, drops the oldest first, keeps what a
        // compaction reports, and leaves out a flush's start.
        let log = ActivityLog::default();
        log.record(&EngineEvent::FlushStarted { memtable_bytes: 1 });
        assert!(log.recent().is_empty());
        for i in 0..(KEPT + 3) {
            log.record(&EngineEvent::FlushFinished {
                table_number: i as u64,
                bytes_out: i as u64,
                duration: Duration::from_micros(7),
            });
        }
        let recent = log.recent();
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent[0].bytes_out, 3);
        assert_eq!(recent[KEPT - 1].bytes_out, (KEPT + 2) as u64);
        log.record(&EngineEvent::CompactionFinished {
            level: 0,
            output_level: 1,
            files_in: 4,
            bytes_in: 400,
            files_out: 2,
            bytes_out: 300,
            trivial_move: false,
            duration: Duration::from_millis(3),
        });
        let last = log.recent().pop().unwrap();
        assert_eq!(last.kind(), Kind::Compaction);
        assert_eq!(
            (last.output_level, last.files_in, last.bytes_out),
            (1, 4, 300)
        );
        assert_eq!(last.duration_us, 3000);
    }
}
