//! Backup and restore against real processes: a backup taken through the
//! gateway while writers run holds exactly the state at its raft index (as
//! the change history folds to it), restores into a new cluster key for
//! key, and a damaged file restores nothing.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use strata_client::proto::ChangeKind;
use strata_client::{Client, ClientError, ScanSelector, WatchSelector};
use strata_harness::{Cluster, workspace_binary};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// Puts and deletes through the gateway until `stop`: batches of puts of
/// fresh keys with 1 KiB values, and deletes of earlier ones.
async fn write(client: Client, stop: Arc<AtomicBool>) -> usize {
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) && n < 5000 {
        let ops = (0..10)
            .map(|i| {
                let key = format!("b/{n:05}-{i}");
                (
                    Bytes::from(key),
                    Some(Bytes::from(vec![b'a' + (i as u8); 1024])),
                )
            })
            .collect();
        if client.batch(ops).await.is_ok() {
            n += 1;
        }
        if n.is_multiple_of(3) {
            let _ = client.delete(format!("b/{:05}-0", n / 2)).await;
        }
    }
    n
}

/// Every key and value the cluster behind `client` holds.
async fn scan_all(client: &Client) -> State {
    let mut state = State::new();
    let mut token = Vec::new();
    loop {
        let page = client
            .scan(ScanSelector::All, 1000, token, false)
            .await
            .unwrap();
        for kv in page.kvs {
            state.insert(kv.key.to_vec(), kv.value.to_vec());
        }
        if page.next_page_token.is_empty() {
            return state;
        }
        token = page.next_page_token;
    }
}

/// The state the change history folds to through raft index `through`.
async fn history_through(client: &Client, through: u64) -> State {
    let mut watcher = client.watch(WatchSelector::All, 1, Some(Duration::from_millis(200)));
    let mut state = State::new();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), watcher.next())
            .await
            .expect("a watch message within 20 s")
            .unwrap();
        for e in m.events.iter().filter(|e| e.index <= through) {
            if e.kind == ChangeKind::Delete as i32 {
                state.remove(&e.key.to_vec());
            } else {
                state.insert(e.key.to_vec(), e.value.to_vec());
            }
        }
        if m.index >= through {
            return state;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_into_a_new_cluster_key_for_key() {
    // Proves: a backup taken through the gateway while batches and deletes
    // run holds exactly the state at the raft index it names (the change
    // history folded to that index), not a mix of states; `strata snapshot
    // status` reads the same index, count and checksum from the file; a
    // damaged copy is refused before anything is written; the backup
    // restores into a new 3-node cluster key for key; and a restore into a
    // cluster that holds data is refused.
    let source = Cluster::start(3).await.unwrap();
    let client = Client::connect(&source.gateway_url()).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write(client.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.backup");
    let mut bytes = Vec::new();
    let info = client
        .backup(|chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await
        .unwrap();
    std::fs::write(&file, &bytes).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let batches = writer.await.unwrap();
    let (read_info, pairs) = strata_client::proto_backup::read(&bytes).unwrap();
    assert_eq!(read_info, info);
    let saved: State = pairs
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    eprintln!(
        "backup at index {}: {} keys, {} bytes, sha256 {}; {batches} batches written meanwhile",
        info.index,
        info.pairs,
        bytes.len(),
        info.sha256_hex()
    );
    let bytes = std::sync::Arc::new(bytes);
    assert!(info.pairs > 50, "the backup caught too little of the load");
    let user: State = saved
        .iter()
        .filter(|(k, _)| k.starts_with(b"b/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let history: State = history_through(&client, info.index)
        .await
        .into_iter()
        .filter(|(k, _)| k.starts_with(b"b/"))
        .collect();
    assert!(
        user == history,
        "the backup is not the state at index {}: {} keys vs {} in the history",
        info.index,
        user.len(),
        history.len()
    );

    let status = Command::new(workspace_binary("strata").unwrap())
        .args(["snapshot", "status"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&status.stdout);
    assert_eq!(
        said.trim(),
        format!(
            "index {} keys {} sha256 {}",
            info.index,
            info.pairs,
            info.sha256_hex()
        )
    );

    let target = Cluster::start(3).await.unwrap();
    let fresh = Client::connect(&target.gateway_url()).await.unwrap();
    let mut damaged = bytes.to_vec();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 1;
    let refused = fresh
        .restore(move || Ok(std::io::Cursor::new(damaged.clone())), false)
        .await
        .unwrap_err();
    assert!(matches!(refused, ClientError::Backup(_)), "{refused}");
    assert!(scan_all(&fresh).await.is_empty(), "a damaged backup wrote");

    // The file, restored by the CLI as an operator would (read from disk
    // a pair at a time, twice: checked whole, then written).
    let restore = Command::new(workspace_binary("strata").unwrap())
        .args(["--endpoint", &target.gateway_url(), "snapshot", "restore"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&restore.stdout);
    assert!(
        restore.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&restore.stderr)
    );
    eprintln!("restored: {}", said.trim());
    assert_eq!(scan_all(&fresh).await, saved, "the new cluster differs");
    let again = fresh
        .restore(move || Ok(std::io::Cursor::new(bytes.to_vec())), false)
        .await
        .unwrap_err();
    assert!(matches!(again, ClientError::NotEmpty { .. }), "{again}");
}
