//! Backup and restore against real processes: a backup taken through the
//! gateway while writers run holds exactly the state at its raft index (as
//! the change history folds to it); loaded into a running new cluster it
//! gives every key back with its value and lease; restored offline into
//! new members' data directories (`strata-node restore`) it gives every
//! key back with its value, indexes and lease, under a new cluster id;
//! and a damaged file restores nothing.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use strata_client::proto::ChangeKind;
use strata_client::proto_backup::BackupItem;
use strata_client::{Client, ClientError, ScanSelector, WatchSelector};
use strata_harness::{Cluster, workspace_binary};

type State = BTreeMap<Vec<u8>, Vec<u8>>;
/// Every key with its value, create index, mod index and lease.
type Versions = BTreeMap<Vec<u8>, (Vec<u8>, u64, u64, u64)>;

/// The lease the test puts keys under, with its TTL (long enough to
/// outlast the test).
const LEASE: u64 = 42;
const LEASE_TTL: Duration = Duration::from_secs(3600);

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
    scan_versions(client)
        .await
        .into_iter()
        .map(|(k, (v, ..))| (k, v))
        .collect()
}

/// Every key the cluster behind `client` holds, with its indexes and lease.
async fn scan_versions(client: &Client) -> Versions {
    let mut state = Versions::new();
    let mut token = Vec::new();
    loop {
        let page = client
            .scan(ScanSelector::All, 1000, token, false)
            .await
            .unwrap();
        for kv in page.kvs {
            state.insert(
                kv.key.to_vec(),
                (kv.value.to_vec(), kv.create_index, kv.mod_index, kv.lease),
            );
        }
        if page.next_page_token.is_empty() {
            return state;
        }
        token = page.next_page_token;
    }
}

/// The cluster id the node answering through `client` knows, once its
/// first leader named the cluster.
async fn named(client: &Client) -> u64 {
    for _ in 0..100 {
        let id = client.status().await.unwrap().cluster_id;
        if id != 0 {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the cluster was not named within 10 s");
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
    // history folded to that index), not a mix of states, with the lease
    // and the keys under it; `strata snapshot status` reads the same index,
    // counts, cluster and checksum from the file; a damaged copy is
    // refused before anything is written; loaded into a running new
    // 3-node cluster it gives back every key and value and the lease with
    // its keys, and a second load into it is refused; restored offline
    // into three new members' data directories it gives back every key
    // with its value, create and mod index and lease, under a new cluster
    // id, and the new cluster's writes go on after the backup's index.
    let source = Cluster::start(3).await.unwrap();
    // A backup needs the admin role.
    let client = source.admin_client().await.unwrap();
    let source_id = named(&client).await;
    client.lease_grant(LEASE_TTL, LEASE).await.unwrap();
    for i in 0..20 {
        client
            .put_with_lease(format!("l/{i:02}"), format!("leased {i}"), LEASE)
            .await
            .unwrap();
    }
    // Keys put twice: their create and mod indexes differ.
    for round in 0..2 {
        for i in 0..5 {
            client
                .put(format!("v/{i}"), format!("round {round}"))
                .await
                .unwrap();
        }
    }
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
    let (read_info, items) = strata_client::proto_backup::read(&bytes).unwrap();
    assert_eq!(read_info, info);
    assert_eq!(info.cluster_id, source_id, "the backup names its cluster");
    assert_eq!(
        items[0],
        BackupItem::Lease {
            id: LEASE,
            ttl_ms: LEASE_TTL.as_millis() as u64
        }
    );
    let versions: Versions = strata_client::proto_backup::pairs(&items)
        .map(|p| {
            (
                p.key.clone(),
                (p.value.clone(), p.create_index, p.mod_index, p.lease),
            )
        })
        .collect();
    let saved: State = versions
        .iter()
        .map(|(k, (v, ..))| (k.clone(), v.clone()))
        .collect();
    let leased: Vec<Vec<u8>> = versions
        .iter()
        .filter(|(_, (.., lease))| *lease == LEASE)
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(leased.len(), 20, "the keys under the lease");
    let rewritten = versions
        .iter()
        .filter(|(k, (_, create, modified, _))| k.starts_with(b"v/") && create < modified)
        .count();
    assert_eq!(rewritten, 5, "the keys put twice");
    eprintln!(
        "backup at index {}: {} keys, {} lease, {} bytes, sha256 {}; {batches} batches written meanwhile",
        info.index,
        info.pairs,
        info.leases,
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
            "index {} keys {} leases 1 cluster {source_id:016x} sha256 {}",
            info.index,
            info.pairs,
            info.sha256_hex()
        )
    );

    // Loaded into a running new cluster, through its gateway.
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

    // The file, loaded by the CLI as an operator would (read from disk an
    // item at a time, twice: checked whole, then written).
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
    eprintln!("loaded: {}", said.trim());
    assert_eq!(scan_all(&fresh).await, saved, "the loaded cluster differs");
    let lease = fresh.lease_time_to_live(LEASE, true).await.unwrap();
    assert_eq!(lease.ttl_ms, LEASE_TTL.as_millis() as u64);
    let keys: Vec<Vec<u8>> = lease.keys.iter().map(|k| k.to_vec()).collect();
    assert_eq!(keys, leased, "the loaded lease holds its keys");
    let again = fresh
        .restore(move || Ok(std::io::Cursor::new(bytes.to_vec())), false)
        .await
        .unwrap_err();
    assert!(matches!(again, ClientError::NotEmpty { .. }), "{again}");
    drop(target);

    // Restored offline into the data directories of three new members,
    // as an operator would: `strata-node restore` once per member.
    let node = workspace_binary("strata-node").unwrap();
    let restored = Cluster::start_prepared(3, |dirs, peers| {
        for (id, data_dir) in dirs {
            let out = Command::new(&node)
                .arg("restore")
                .arg(&file)
                .args(["--id", &id.to_string(), "--peers", peers, "--data-dir"])
                .arg(data_dir)
                .output()?;
            anyhow::ensure!(
                out.status.success(),
                "restoring member {id}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
        }
        Ok(())
    })
    .await
    .unwrap();
    let reborn = Client::connect(&restored.gateway_url()).await.unwrap();
    let reborn_id = named(&reborn).await;
    assert_ne!(
        reborn_id, source_id,
        "the restored cluster has an id of its own"
    );
    assert_eq!(
        scan_versions(&reborn).await,
        versions,
        "the restored cluster differs in a value, an index or a lease"
    );
    let lease = reborn.lease_time_to_live(LEASE, true).await.unwrap();
    let keys: Vec<Vec<u8>> = lease.keys.iter().map(|k| k.to_vec()).collect();
    assert_eq!(keys, leased, "the restored lease holds its keys");
    let mut from_before = reborn.watch(WatchSelector::All, info.index, None);
    let compacted = tokio::time::timeout(Duration::from_secs(20), from_before.next())
        .await
        .expect("the watch answers within 20 s")
        .unwrap_err();
    assert!(
        matches!(&compacted, ClientError::Status(s) if s.code() == tonic::Code::OutOfRange),
        "a watch from the backup's index: {compacted}"
    );
    let mut from_after = reborn.watch(WatchSelector::All, info.index + 1, None);
    let next = reborn.put("after/restore", "x").await.unwrap();
    // Messages without events (entries that changed no key: the new
    // leader's first, the one naming the cluster) may come first.
    let seen = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let m = from_after.next().await.unwrap();
            if let Some(e) = m.events.first() {
                return (e.key.clone(), e.index);
            }
        }
    })
    .await
    .expect("a watch from after the backup's index sees the next write within 20 s");
    assert_eq!(
        (&seen.0[..], seen.1),
        (&b"after/restore"[..], next.index),
        "the first change a watch from after the backup's index sees"
    );
    assert!(
        next.index > info.index,
        "a write after the restore is at {}, not after the backup's {}",
        next.index,
        info.index
    );
    eprintln!(
        "restored offline: {} keys with their indexes and leases; cluster {source_id:016x} became {reborn_id:016x}",
        versions.len()
    );
}
