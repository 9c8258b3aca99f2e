//! The backup format (`strata_proto::backup`), which `strata snapshot
//! status|restore` and `strata-node restore` read from files anyone may
//! hand them.

use strata_proto::backup::{BackupItem, BackupPair, BackupReader, BackupWriter};

/// `backup_read`: any bytes either read as a whole backup, which then
/// writes back byte for byte (version 2), or fail with an error; never a
/// panic, and never an allocation of what a damaged length claims.
pub fn backup_read(data: &[u8]) {
    let Ok(mut reader) = BackupReader::new(data) else {
        return;
    };
    let version = reader.version();
    let mut items = Vec::new();
    loop {
        match reader.next_item() {
            Ok(Some(item)) => items.push(item),
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let info = reader
        .info()
        .expect("a backup that read whole says what it held")
        .clone();
    let pairs = items
        .iter()
        .filter(|i| matches!(i, BackupItem::Pair(_)))
        .count() as u64;
    assert_eq!(info.pairs, pairs, "the count read is the pairs held");
    assert_eq!(info.leases + pairs, items.len() as u64);
    if version != strata_proto::backup::VERSION {
        return;
    }
    let (mut writer, mut again) =
        BackupWriter::start(info.index, info.created_unix_ms, info.cluster_id);
    for item in &items {
        match item {
            BackupItem::Lease { id, ttl_ms } => writer.lease(*id, *ttl_ms, &mut again),
            BackupItem::Pair(pair) => writer.pair(pair, &mut again),
        }
    }
    again.extend(writer.finish());
    assert_eq!(
        again, data,
        "a backup that reads writes back the same bytes"
    );
}

/// Backups the writer makes: empty, leases only, and leases and pairs.
pub fn backup_seeds() -> Vec<Vec<u8>> {
    let build = |leases: &[(u64, u64)], pairs: &[(&str, &str, u64)]| {
        let (mut w, mut out) = BackupWriter::start(120, 1_700_000_000_000, 0x5eed);
        for (id, ttl) in leases {
            w.lease(*id, *ttl, &mut out);
        }
        for (i, (key, value, lease)) in pairs.iter().enumerate() {
            let pair = BackupPair {
                key: key.as_bytes().to_vec(),
                value: value.as_bytes().to_vec(),
                create_index: 10 + i as u64,
                mod_index: 20 + i as u64,
                lease: *lease,
            };
            w.pair(&pair, &mut out);
        }
        out.extend(w.finish());
        out
    };
    vec![
        build(&[], &[]),
        build(&[(7, 30_000)], &[]),
        build(
            &[(3, 1000), (7, 30_000)],
            &[("a", "1", 0), ("b", "", 7), ("c", "three", 3)],
        ),
    ]
}
