//! The engine's shape and work, read from `Engine::stats` at each scrape.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;
use strata_engine::{Engine, LevelStats};

use super::write::{counter, gauge};

/// Engine gauges and counters under `strata_engine_`.
#[derive(Debug)]
pub(super) struct EngineCollector {
    engine: Arc<Engine>,
}

impl EngineCollector {
    pub(super) fn new(engine: Arc<Engine>) -> Self {
        EngineCollector { engine }
    }
}

/// A gauge family with one sample per level, labelled `level`.
fn per_level(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    levels: &[LevelStats],
    value: fn(&LevelStats) -> f64,
) -> Result<(), std::fmt::Error> {
    let help = format!("{help}.");
    let mut family = e.encode_descriptor(
        name,
        &help,
        unit.as_ref(),
        ConstGauge::new(0.0).metric_type(),
    )?;
    for level in levels {
        let labels = [("level", level.level.to_string())];
        let sample = family.encode_family(&labels)?;
        ConstGauge::new(value(level)).encode(sample)?;
    }
    Ok(())
}

fn seconds(micros: u64) -> f64 {
    micros as f64 / 1e6
}

impl Collector for EngineCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = self.engine.stats();
        let e = &mut e;
        gauge(
            e,
            "memtable",
            "Arena bytes of the active memtable",
            Some(Unit::Bytes),
            s.memtable_bytes as f64,
        )?;
        gauge(
            e,
            "immutable_memtables",
            "Frozen memtables waiting to be flushed",
            None,
            s.immutable_memtables as f64,
        )?;
        gauge(
            e,
            "immutable_memtable",
            "Arena bytes of frozen memtables",
            Some(Unit::Bytes),
            s.immutable_memtable_bytes as f64,
        )?;
        // The limits the shape is measured against, so that a reader can
        // tell how full the memtable is and how close level 0 is to
        // slowing or stopping writers.
        let opts = self.engine.options();
        gauge(
            e,
            "memtable_limit",
            "Arena bytes at which the active memtable is frozen for a flush",
            Some(Unit::Bytes),
            opts.memtable_size_bytes as f64,
        )?;
        gauge(
            e,
            "l0_slowdown_files",
            "Level-0 tables at which writers are slowed down",
            None,
            opts.l0_slowdown_trigger as f64,
        )?;
        gauge(
            e,
            "l0_stop_files",
            "Level-0 tables at which writers stop until a compaction ends",
            None,
            opts.l0_stop_trigger as f64,
        )?;
        per_level(
            e,
            "level_files",
            "Table files per level",
            None,
            &s.levels,
            |l| l.file_count as f64,
        )?;
        per_level(
            e,
            "level",
            "Table bytes per level",
            Some(Unit::Bytes),
            &s.levels,
            |l| l.size_bytes as f64,
        )?;
        counter(
            e,
            "flushes",
            "Memtable flushes since open",
            None,
            s.flush_count as f64,
        )?;
        counter(
            e,
            "flush",
            "Time spent in flushes",
            Some(Unit::Seconds),
            seconds(s.flush_micros),
        )?;
        counter(
            e,
            "flush_written",
            "Table bytes written by flushes",
            Some(Unit::Bytes),
            s.flush_bytes_written as f64,
        )?;
        counter(
            e,
            "compactions",
            "Compactions since open",
            None,
            s.compaction_count as f64,
        )?;
        counter(
            e,
            "compaction",
            "Time spent in compactions",
            Some(Unit::Seconds),
            seconds(s.compaction_micros),
        )?;
        counter(
            e,
            "compaction_read",
            "Input table bytes read by compactions",
            Some(Unit::Bytes),
            s.compaction_bytes_read as f64,
        )?;
        counter(
            e,
            "compaction_written",
            "Table bytes written by compactions",
            Some(Unit::Bytes),
            s.compaction_bytes_written as f64,
        )?;
        counter(
            e,
            "user_written",
            "Key and value bytes written by callers",
            Some(Unit::Bytes),
            s.user_bytes_written as f64,
        )?;
        counter(
            e,
            "stall",
            "Time writers waited on a full write stop",
            Some(Unit::Seconds),
            seconds(s.stall_micros),
        )?;
        counter(
            e,
            "slowdown",
            "Time writers were slowed down",
            Some(Unit::Seconds),
            seconds(s.slowdown_micros),
        )?;
        counter(e, "gets", "Point lookups", None, s.gets as f64)?;
        counter(
            e,
            "table_probes",
            "Tables consulted by point lookups",
            None,
            s.table_probes as f64,
        )?;
        counter(
            e,
            "bloom_useful",
            "Table probes the bloom filter answered without a read",
            None,
            s.bloom_useful as f64,
        )?;
        counter(
            e,
            "bloom_false_positives",
            "Table probes the bloom filter passed that found nothing",
            None,
            s.bloom_false_positives as f64,
        )?;
        counter(
            e,
            "block_cache_hits",
            "Data blocks found in the block cache",
            None,
            s.block_cache_hits as f64,
        )?;
        counter(
            e,
            "block_cache_misses",
            "Data blocks read because the cache lacked them",
            None,
            s.block_cache_misses as f64,
        )?;
        counter(
            e,
            "events_dropped",
            "Engine events dropped for slow subscribers",
            None,
            s.events_dropped as f64,
        )?;
        Ok(())
    }
}
