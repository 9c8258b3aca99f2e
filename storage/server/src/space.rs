//! Recovery from a full disk. A write that hits ENOSPC poisons the engine
//! or the raft log, and the node stops acknowledging (reporting itself
//! unhealthy) rather than guess what reached the disk. Unlike other
//! failures, a full disk goes away by itself when space is freed: this
//! module notices that, so the node can restart and recover without an
//! operator.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::core::Core;

/// How often a node with a full disk checks for space again.
const PROBE_PERIOD: Duration = Duration::from_secs(1);
const PROBE_FILE: &str = ".space-probe";

/// Resolves once this node's storage failed on a full disk and
/// `needed_bytes` can be written (and synced) to `data_dir` again. Never
/// resolves on a node whose storage is fine or failed otherwise.
pub async fn space_after_full(core: Arc<Core>, data_dir: PathBuf, needed_bytes: u64) {
    let mut announced = false;
    loop {
        tokio::time::sleep(PROBE_PERIOD).await;
        if !core.peer().status().disk_full() {
            continue;
        }
        if !announced {
            tracing::warn!(
                needed_bytes,
                dir = %data_dir.display(),
                "the disk is full; the node restarts itself once this much can be written again"
            );
            announced = true;
        }
        let dir = data_dir.clone();
        let probe = tokio::task::spawn_blocking(move || probe(&dir, needed_bytes)).await;
        match probe {
            Ok(Ok(())) => {
                tracing::warn!(
                    needed_bytes,
                    "the disk has room again; restarting the node to recover"
                );
                return;
            }
            Ok(Err(e)) => tracing::info!(error = %e, "still no room on the disk"),
            Err(e) => tracing::warn!(error = %e, "the disk space probe did not finish"),
        }
    }
}

/// Writes and syncs `bytes` zeros to a probe file in `dir`, then removes
/// it: the direct test of whether the node could write again.
fn probe(dir: &Path, bytes: u64) -> std::io::Result<()> {
    let path = dir.join(PROBE_FILE);
    let result = (|| {
        let mut f = std::fs::File::create(&path)?;
        let chunk = vec![0u8; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64);
            // n <= chunk.len(), so the cast cannot truncate.
            f.write_all(&chunk[..n as usize])?;
            left -= n;
        }
        f.sync_all()
    })();
    let removed = std::fs::remove_file(&path);
    result?;
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        probe(dir.path(), 3 << 20).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_probe_that_fails_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        assert!(probe(&dir.path().join("missing"), 1).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
