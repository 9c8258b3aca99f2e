//! Transactions against real processes: a bank whose accounts move money
//! between each other in transactions guarded by the accounts' mod
//! indexes, through the gateway, while leadership moves and nodes are
//! killed and restarted. Every audit (one transaction reading every
//! account) must see the total the bank started with, every transfer the
//! clients were told succeeded must be in the change history exactly once,
//! and no transfer the clients were told failed may be.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use strata_client::proto::txn_op_result::Result as OpResult;
use strata_client::proto::{ChangeKind, CompareOp, KeyValue, TxnResponse};
use strata_client::{Client, WatchSelector, txn};
use strata_harness::Cluster;

const ACCOUNTS: usize = 6;
const OPENING_BALANCE: i64 = 1_000;
const TOTAL: i64 = ACCOUNTS as i64 * OPENING_BALANCE;
/// Transfer attempts per client, at most; the run also ends at `stop`.
const ATTEMPTS: usize = 20_000;

fn account(i: usize) -> String {
    format!("bank/{i}")
}

/// Reads every account in one transaction (a range), as `(key, balance,
/// mod index)`.
async fn audit(client: &Client) -> Result<Vec<(String, i64, u64)>, String> {
    let r = client
        .txn(vec![], vec![txn::range("bank/", "bank0", 0)], vec![])
        .await
        .map_err(|e| e.to_string())?;
    let Some(OpResult::Range(range)) = r.results.into_iter().next().and_then(|r| r.result) else {
        return Err("an audit without its range".into());
    };
    Ok(range.kvs.iter().map(balance).collect())
}

fn balance(kv: &KeyValue) -> (String, i64, u64) {
    let key = String::from_utf8(kv.key.to_vec()).unwrap();
    let value: i64 = std::str::from_utf8(&kv.value).unwrap().parse().unwrap();
    (key, value, kv.mod_index)
}

/// What one client was told.
#[derive(Debug, Default)]
struct Told {
    /// The index each succeeded transfer was applied at, with the two
    /// balances it wrote.
    succeeded: Vec<(u64, [(String, i64); 2])>,
    /// Indexes of transfers answered "failed": a compare saw a later write.
    lost_race: Vec<u64>,
    /// Transfers whose outcome stayed unknown after the client's retries.
    unknown: u64,
    /// Answers that were a replay of an earlier attempt.
    replayed: u64,
    audits: u64,
}

fn read_pair(r: &TxnResponse) -> Option<[(String, i64, u64); 2]> {
    let mut got = r.results.iter().filter_map(|r| match &r.result {
        Some(OpResult::Get(g)) => g.kv.as_ref().map(balance),
        _ => None,
    });
    Some([got.next()?, got.next()?])
}

/// Moves money between random accounts until `stop` or `ATTEMPTS`: reads
/// the two accounts in one transaction, then writes both new balances in
/// a transaction that holds only if neither account changed since (their
/// mod indexes), with a request id so that an unknown outcome is settled.
/// Every tenth attempt is an audit instead.
async fn transfer(client: Client, seed: u64, stop: Arc<AtomicBool>) -> Told {
    let mut told = Told::default();
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let started = Instant::now();
    for attempt in 0..ATTEMPTS {
        if stop.load(Ordering::Relaxed) || started.elapsed() > Duration::from_secs(90) {
            break;
        }
        if attempt % 10 == 9 {
            if let Ok(seen) = audit(&client).await {
                let sum: i64 = seen.iter().map(|(_, b, _)| b).sum();
                assert_eq!(sum, TOTAL, "an audit saw {seen:?}");
                assert_eq!(seen.len(), ACCOUNTS, "an audit saw {seen:?}");
                told.audits += 1;
            }
            continue;
        }
        let from = next() as usize % ACCOUNTS;
        let to = (from + 1 + next() as usize % (ACCOUNTS - 1)) % ACCOUNTS;
        let (a, b) = (account(from), account(to));
        let Ok(read) = client
            .txn(
                vec![],
                vec![txn::get(a.clone()), txn::get(b.clone())],
                vec![],
            )
            .await
        else {
            continue;
        };
        let [(_, va, ma), (_, vb, mb)] = read_pair(&read).expect("both accounts exist");
        let amount = (next() % 50) as i64;
        if amount > va {
            continue;
        }
        let wrote = [(a.clone(), va - amount), (b.clone(), vb + amount)];
        let answer = client
            .txn(
                vec![
                    txn::mod_index(a.clone(), CompareOp::Equal, ma),
                    txn::mod_index(b.clone(), CompareOp::Equal, mb),
                ],
                wrote
                    .iter()
                    .map(|(k, v)| txn::put(k.clone(), v.to_string()))
                    .collect(),
                vec![],
            )
            .await;
        match answer {
            Ok(r) => {
                let h = r.header.unwrap_or_default();
                told.replayed += u64::from(h.replayed);
                if r.succeeded {
                    told.succeeded.push((h.index, wrote));
                } else {
                    told.lost_race.push(h.index);
                }
            }
            Err(e) if e.is_retryable() => {}
            Err(_) => told.unknown += 1,
        }
    }
    told
}

/// Every change to the accounts from index 1 on, grouped by index, up to
/// the put of `bank/~end`.
async fn history(gateway: &str) -> BTreeMap<u64, Vec<(String, i64)>> {
    let client = Client::connect(gateway).await.unwrap();
    let mut watcher = client.watch(
        WatchSelector::Prefix(b"bank/".to_vec()),
        1,
        Some(Duration::from_millis(500)),
    );
    let mut by_index: BTreeMap<u64, Vec<(String, i64)>> = BTreeMap::new();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(30), watcher.next())
            .await
            .expect("the history reaches the end key")
            .expect("the watch runs");
        for e in m.events {
            assert_eq!(e.kind, ChangeKind::Put as i32, "an account was deleted");
            let key = String::from_utf8(e.key.to_vec()).unwrap();
            if key == "bank/~end" {
                return by_index;
            }
            let value = std::str::from_utf8(&e.value).unwrap().parse().unwrap();
            by_index.entry(e.index).or_default().push((key, value));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bank_transfers_keep_the_total_and_apply_once_across_kills_and_transfers() {
    // Proves: transactions are atomic (no audit, and not the end state,
    // ever sees money created or lost), isolated (a transfer whose read is
    // stale fails its compare instead of overwriting), and applied exactly
    // once under retries (every transfer told "succeeded" is in the history
    // at its index with exactly the balances it wrote; every one told
    // "failed" wrote nothing), while leaders are moved and killed.
    let mut c = Cluster::start(3).await.unwrap();
    let gateway = c.gateway_url();
    let plain = Client::connect(&gateway).await.unwrap();
    let opening: Vec<(bytes::Bytes, Option<bytes::Bytes>)> = (0..ACCOUNTS)
        .map(|i| (account(i).into(), Some(OPENING_BALANCE.to_string().into())))
        .collect();
    plain.batch(opening).await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4u64)
        .map(|n| {
            let gateway = gateway.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let client = Client::connect(&gateway).await.unwrap().with_request_ids();
                transfer(client, 0x9e37_79b9_7f4a_7c15 ^ (n + 1), stop).await
            })
        })
        .collect();

    let pause = || tokio::time::sleep(Duration::from_millis(700));
    pause().await;
    let to = c.follower().await.unwrap();
    c.admin_client()
        .await
        .unwrap()
        .transfer_leader(to)
        .await
        .unwrap();
    pause().await;
    let follower = c.follower().await.unwrap();
    c.kill(follower).unwrap();
    pause().await;
    c.start_node(follower).unwrap();
    pause().await;
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    c.kill(leader).unwrap();
    c.wait_leader(Duration::from_secs(15)).await.unwrap();
    pause().await;
    c.start_node(leader).unwrap();
    pause().await;
    stop.store(true, Ordering::Relaxed);

    let mut told = Told::default();
    for client in clients {
        let t = client.await.unwrap();
        told.succeeded.extend(t.succeeded);
        told.lost_race.extend(t.lost_race);
        told.unknown += t.unknown;
        told.replayed += t.replayed;
        told.audits += t.audits;
    }
    eprintln!(
        "transfers: {} succeeded, {} lost a race, {} unknown, {} answered by replay; {} audits",
        told.succeeded.len(),
        told.lost_race.len(),
        told.unknown,
        told.replayed,
        told.audits
    );
    assert_eq!(
        told.unknown, 0,
        "every outcome is settled by its request id"
    );
    assert!(
        told.succeeded.len() >= 20,
        "too few transfers to prove much"
    );
    assert!(told.audits >= 10, "too few audits to prove much");

    let end = audit(&plain).await.unwrap();
    assert_eq!(end.iter().map(|(_, b, _)| b).sum::<i64>(), TOTAL, "{end:?}");
    c.put_until_ok("bank/~end", "end", Duration::from_secs(20))
        .await
        .unwrap();
    let history = history(&gateway).await;
    let transfers: BTreeMap<u64, Vec<(String, i64)>> = history
        .iter()
        .filter(|(_, changes)| changes.len() == 2)
        .map(|(i, c)| (*i, c.clone()))
        .collect();
    assert_eq!(
        history.len(),
        transfers.len() + 1,
        "every change after the opening batch is a transfer of two accounts"
    );
    for (index, wrote) in &told.succeeded {
        assert_eq!(
            transfers.get(index),
            Some(&wrote.to_vec()),
            "the transfer told succeeded at {index}"
        );
    }
    for index in &told.lost_race {
        assert!(
            !transfers.contains_key(index),
            "a transfer told failed wrote at {index}"
        );
    }
    assert_eq!(
        transfers.len(),
        told.succeeded.len(),
        "the history holds transfers nobody was told succeeded"
    );
    // The history replays to the end state.
    let mut balances: BTreeMap<String, i64> = BTreeMap::new();
    for changes in history.values() {
        for (k, v) in changes {
            balances.insert(k.clone(), *v);
        }
    }
    let held: BTreeMap<String, i64> = end.into_iter().map(|(k, b, _)| (k, b)).collect();
    assert_eq!(balances, held);
}
