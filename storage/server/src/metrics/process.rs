//! The node process: CPU, memory, open files, start time, and free space where its
//! data lives, read from `/proc` and `statvfs` at each scrape.

use std::path::PathBuf;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Unit;

use super::write::{counter, gauge};

/// Process metrics under `strata_process_`.
#[derive(Debug)]
pub(super) struct ProcessCollector {
    data_dir: PathBuf,
}

impl ProcessCollector {
    pub(super) fn new(data_dir: PathBuf) -> Self {
        ProcessCollector { data_dir }
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let e = &mut e;
        // A value the system will not give is left out of the scrape
        // rather than shown as a false zero.
        if let Ok(me) = procfs::process::Process::myself() {
            if let Ok(stat) = me.stat() {
                let ticks = procfs::ticks_per_second() as f64;
                counter(
                    e,
                    "cpu",
                    "User and system CPU time",
                    Some(Unit::Seconds),
                    (stat.utime + stat.stime) as f64 / ticks,
                )?;
                gauge(
                    e,
                    "resident_memory",
                    "Resident memory",
                    Some(Unit::Bytes),
                    (stat.rss * procfs::page_size()) as f64,
                )?;
                // Ticks after boot, as the kernel counts a process's start.
                if let Ok(boot) = procfs::boot_time_secs() {
                    gauge(
                        e,
                        "start_time",
                        "When the process started, in seconds since the Unix epoch",
                        Some(Unit::Seconds),
                        boot as f64 + stat.starttime as f64 / ticks,
                    )?;
                }
                gauge(
                    e,
                    "threads",
                    "Threads of the process",
                    None,
                    stat.num_threads as f64,
                )?;
            }
            if let Ok(fds) = me.fd_count() {
                gauge(e, "open_fds", "Open file descriptors", None, fds as f64)?;
            }
        }
        if let Ok(fs) = rustix::fs::statvfs(&self.data_dir) {
            let free = fs.f_bavail.saturating_mul(fs.f_frsize);
            let size = fs.f_blocks.saturating_mul(fs.f_frsize);
            gauge(
                e,
                "data_dir_free",
                "Space left for the node on the data directory's file system",
                Some(Unit::Bytes),
                free as f64,
            )?;
            gauge(
                e,
                "data_dir_size",
                "Size of the data directory's file system",
                Some(Unit::Bytes),
                size as f64,
            )?;
        }
        Ok(())
    }
}
