//! Log compaction and catch-up by snapshot, with real processes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_harness::{Cluster, metric_value};

/// The tests of this file take turns: the large snapshot's writes load the
/// machine enough for the other cluster's leader to miss heartbeats, and
/// its writers count only 200 as success.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_down_through_compactions_catches_up_by_snapshot() {
    // Proves: the leader compacts its log while a follower is down; the
    // restarted follower cannot be sent the entries it missed, gets a
    // snapshot instead, and then serves exactly the same data. The metrics
    // count the snapshot where it happened: sent by the leader, received and
    // installed by the follower.
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut c = Cluster::start_with_args(
        3,
        &[
            "--compact-log-entries",
            "200",
            "--compact-keep-entries",
            "20",
        ],
    )
    .await
    .unwrap();
    let follower = c.follower().await.unwrap();
    c.kill(follower).unwrap();

    let total = 1200usize;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let http = c.http().clone();
            let gw = c.gateway_url();
            tokio::spawn(async move {
                for i in (w..total).step_by(8) {
                    let r = http
                        .put(format!("{gw}/v1/kv/snap/{i:05}"))
                        .body(format!("v{i}"))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }

    c.start_node(follower).unwrap();
    let url = format!(
        "{}/v1/kv?prefix=snap/&limit=1000&consistency=stale&keys_only=true",
        c.node_url(follower)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.http().get(&url).send().await;
        if let Ok(r) = r
            && r.status() == StatusCode::OK
        {
            let page: Value = r.json().await.unwrap();
            if page["kvs"].as_array().map_or(0, Vec::len) == 1000
                && page["next_page_token"].is_string()
            {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "follower did not catch up; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();
    for id in [leader, follower] {
        for line in c.node_log(id).lines().filter(|l| l.contains("snapshot")) {
            eprintln!("node {id}: {line}");
        }
    }
    assert!(
        c.node_log(follower).contains("snapshot installed"),
        "the follower caught up without a snapshot"
    );
    assert!(
        c.node_log(leader).contains("snapshot sent"),
        "the leader never sent one"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let counted = |text: &str, kind: &str| {
        metric_value(
            text,
            &format!("strata_raft_events_total{{kind=\"{kind}\"}}"),
        )
    };
    loop {
        let (on_follower, on_leader) = (c.scrape(follower).await, c.scrape(leader).await);
        let counts = [
            counted(&on_leader, "snapshot_sent"),
            counted(&on_follower, "snapshot_received"),
            counted(&on_follower, "snapshot_installed"),
        ];
        if counts.iter().all(|&n| n >= 1.0) {
            // The follower installs what it received, no more.
            assert!(
                counts[2] <= counts[1],
                "sent, received, installed: {counts:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "snapshots sent, received, installed: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Every value matches, read locally on the follower.
    for i in (0..total).step_by(97) {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/snap/{i:05}?consistency=stale",
                c.node_url(follower)
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(r.text().await.unwrap(), format!("v{i}"));
    }
}

/// Puts `count` values of `bytes` each under `<prefix><n>` through the
/// gateway, four at a time.
async fn put_large(c: &Cluster, prefix: &str, count: usize, bytes: usize) {
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, gw, prefix) = (c.http().clone(), c.gateway_url(), prefix.to_string());
            tokio::spawn(async move {
                for i in (w..count).step_by(4) {
                    let value = format!("{i:08}").repeat(bytes / 8);
                    // A put of the same value may be repeated: under two
                    // clusters' load a large write can time out (504) or
                    // meet an election (503).
                    let deadline = Instant::now() + Duration::from_secs(30);
                    loop {
                        let r = http
                            .put(format!("{gw}/v1/kv/{prefix}{i:05}"))
                            .body(value.clone())
                            .send()
                            .await
                            .unwrap();
                        let status = r.status();
                        if status == StatusCode::OK {
                            break;
                        }
                        let body = r.text().await.unwrap();
                        assert!(
                            matches!(status.as_u16(), 503 | 504) && Instant::now() < deadline,
                            "{status}: {body}"
                        );
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
}

/// Waits until `what` appears in node `id`'s log `times` times.
async fn wait_logged(c: &Cluster, id: u64, what: &str, times: usize, within: Duration) {
    let deadline = Instant::now() + within;
    while c.node_log(id).matches(what).count() < times {
        assert!(
            Instant::now() < deadline,
            "node {id} did not log `{what}` {times} times; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_built_while_another_is_being_sent_does_not_cut_it_short() {
    // Proves: while a large snapshot is streaming to a follower (held up
    // mid-stream by freezing the follower), a new member joins, so the
    // leader builds a newer snapshot and prunes the older ones; the one
    // being sent is kept until its transfer ends, and the follower
    // installs it whole and serves every value.
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut c = Cluster::start_with_args(
        3,
        &[
            "--compact-log-entries",
            "20",
            "--compact-keep-entries",
            "2",
            "--compact-log-mb",
            "4",
        ],
    )
    .await
    .unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    // The highest id: the joining node asks the members in id order, and
    // must not ask the frozen one first.
    let follower = c
        .node_ids()
        .into_iter()
        .filter(|&id| id != leader)
        .max()
        .unwrap();
    c.kill(follower).unwrap();
    // 48 MiB: more than the stream, the HTTP/2 windows and the sockets
    // buffer together, so the sender blocks mid-stream while the
    // follower is frozen.
    let (count, bytes) = (96, 512 << 10);
    put_large(&c, "big/", count, bytes).await;

    c.start_node(follower).unwrap();
    wait_logged(&c, leader, "sending snapshot", 1, Duration::from_secs(30)).await;
    c.pause(follower).unwrap();
    // The new member needs a snapshot whose configuration includes it:
    // the leader builds one and prunes the others. Resume before the
    // HTTP/2 keep-alive (5 s + 2 s) gives up on the frozen follower.
    c.add_joining_node(4).unwrap();
    let ready_before = c.node_log(leader).matches("snapshot ready").count();
    let deadline = Instant::now() + Duration::from_secs(4);
    while c.node_log(leader).matches("snapshot ready").count() <= ready_before
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rebuilt = c.node_log(leader).matches("snapshot ready").count() > ready_before;
    c.resume(follower).unwrap();
    assert!(
        rebuilt,
        "no newer snapshot was built while the first was being sent; logs in {}",
        c.log_dir().display()
    );

    for id in [follower, 4] {
        let url = format!(
            "{}/v1/kv?prefix=big/&limit=1000&consistency=stale&keys_only=true",
            c.node_url(id)
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = c.http().get(&url).send().await;
            if let Ok(r) = r
                && r.status() == StatusCode::OK
            {
                let page: Value = r.json().await.unwrap();
                if page["kvs"].as_array().map_or(0, Vec::len) == count {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "node {id} did not catch up; logs in {}",
                c.log_dir().display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for i in (0..count).step_by(13) {
            let r = c
                .http()
                .get(format!(
                    "{}/v1/kv/big/{i:05}?consistency=stale",
                    c.node_url(id)
                ))
                .send()
                .await
                .unwrap();
            let value = r.text().await.unwrap();
            assert!(
                value == format!("{i:08}").repeat(bytes / 8),
                "node {id} holds a wrong big/{i:05} ({} bytes)",
                value.len()
            );
        }
    }
    assert!(
        c.node_log(follower).contains("snapshot installed"),
        "the follower caught up without a snapshot"
    );
}

/// A tmpfs mounted over a directory, of a size that can change; unmounted
/// when dropped. Mounting needs root.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, mb: u64) -> Tmpfs {
        let size = format!("size={mb}m");
        run_mount(&["-t", "tmpfs", "-o", &size, "tmpfs"], dir);
        Tmpfs(dir.to_path_buf())
    }

    fn resize(&self, mb: u64) {
        run_mount(&["-o", &format!("remount,size={mb}m")], &self.0);
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn run_mount(args: &[&str], dir: &Path) {
    let out = Command::new("mount").args(args).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "mount {args:?} {} (this test needs root): {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies the tree under `from` into `to`; returns the bytes copied.
fn copy_tree(from: &Path, to: &Path) -> u64 {
    let mut bytes = 0;
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            bytes += copy_tree(&entry.path(), &target);
        } else {
            bytes += std::fs::copy(entry.path(), target).unwrap();
        }
    }
    bytes
}

/// How many keys under `prefix` node `id` holds, read locally; `None`
/// when it does not answer 200.
async fn count_local(c: &Cluster, id: u64, prefix: &str) -> Option<usize> {
    let url = format!(
        "{}/v1/kv?prefix={prefix}&limit=1000&consistency=stale&keys_only=true",
        c.node_url(id)
    );
    let r = c.http().get(&url).send().await.ok()?;
    if r.status() != StatusCode::OK {
        return None;
    }
    let page: Value = r.json().await.ok()?;
    page["kvs"].as_array().map(Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "mounts a tmpfs: run as root with --ignored"]
async fn disk_full_during_a_snapshot_install_keeps_the_old_data_and_recovers() {
    // Proves: a follower whose disk has room to stage a snapshot but not
    // to install it fails as "disk full", keeps answering stale reads from
    // its old data only (never part old, part new), and once space is back
    // restarts itself, finishes the install and holds every value.
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut c = Cluster::start_with_args(
        3,
        &[
            "--compact-log-entries",
            "20",
            "--compact-keep-entries",
            "2",
            "--compact-log-mb",
            "4",
            "--resume-free-mb",
            "48",
        ],
    )
    .await
    .unwrap();
    let leader = c.wait_leader(Duration::from_secs(10)).await.unwrap();
    let follower = c
        .node_ids()
        .into_iter()
        .filter(|&id| id != leader)
        .max()
        .unwrap();
    let old = 8;
    put_large(&c, "old/", old, 64 << 10).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while count_local(&c, follower, "old/").await != Some(old) {
        assert!(
            Instant::now() < deadline,
            "the follower never got the old data"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.kill(follower).unwrap();

    // Its data moves onto a tmpfs with room for the snapshot's 24 MiB to be
    // staged, but not for the install's copy of them as well.
    let data = c.log_dir().join(format!("node{follower}"));
    let kept = data.with_extension("kept");
    std::fs::rename(&data, &kept).unwrap();
    std::fs::create_dir(&data).unwrap();
    let disk = Tmpfs::mount(&data, 1024);
    let used_mb = (copy_tree(&kept, &data) >> 20) + 1;
    disk.resize(used_mb + 36);

    let (count, bytes) = (48, 512 << 10);
    put_large(&c, "big/", count, bytes).await;
    c.start_node(follower).unwrap();
    wait_logged(&c, follower, "the disk is full", 1, Duration::from_secs(60)).await;
    assert!(
        c.node_log(follower).contains("installing snapshot"),
        "the disk filled up elsewhere than in the install; logs in {}",
        c.log_dir().display()
    );
    // Stale reads, if it answers them, show the old state only.
    if let (Some(o), Some(b)) = (
        count_local(&c, follower, "old/").await,
        count_local(&c, follower, "big/").await,
    ) {
        assert_eq!((o, b), (old, 0), "a read saw part of the install");
    }

    disk.resize(used_mb + 256);
    let deadline = Instant::now() + Duration::from_secs(60);
    while count_local(&c, follower, "big/").await != Some(count)
        || count_local(&c, follower, "old/").await != Some(old)
    {
        assert!(
            Instant::now() < deadline,
            "the follower did not recover; logs in {}",
            c.log_dir().display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for i in (0..count).step_by(7) {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/big/{i:05}?consistency=stale",
                c.node_url(follower)
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.text().await.unwrap(),
            format!("{i:08}").repeat(bytes / 8),
            "big/{i:05}"
        );
    }
    drop(c);
    drop(disk);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_snapshot_drops_the_log_so_a_returning_follower_gets_a_snapshot() {
    // Proves POST /v1/cluster/snapshot through the gateway on real processes:
    // far below the automatic thresholds, every live member drops its log up
    // to its last write, a member that is down is reported failed (not
    // skipped), and that member, started again, can only catch up by
    // installing a snapshot, after which it serves the writes it missed.
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut c = Cluster::start(3).await.unwrap();
    let follower = c.follower().await.unwrap();
    c.kill(follower).unwrap();
    let mut last = 0;
    for i in 0..100 {
        let r = c
            .http()
            .put(format!("{}/v1/kv/asked/{i:03}", c.gateway_url()))
            .body(format!("v{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        last = r.json::<Value>().await.unwrap()["index"].as_u64().unwrap();
    }
    let answer = drop_logs(&c, follower, last).await;
    for n in answer["nodes"].as_array().unwrap() {
        if n["id"] == follower {
            assert_eq!(n["outcome"], "failed", "{answer}");
            assert!(
                n["error"].as_str().unwrap().contains("unreachable"),
                "{answer}"
            );
        } else {
            assert_eq!(n["outcome"], "done", "{answer}");
            assert!(n["durable_index"].as_u64().unwrap() >= last, "{answer}");
        }
    }

    c.start_node(follower).unwrap();
    wait_logged(
        &c,
        follower,
        "snapshot installed",
        1,
        Duration::from_secs(30),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c
            .http()
            .get(format!(
                "{}/v1/kv/asked/099?consistency=stale",
                c.node_url(follower)
            ))
            .send()
            .await;
        if let Ok(r) = r
            && r.status() == StatusCode::OK
        {
            assert_eq!(r.text().await.unwrap(), "v99");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the follower never served the missed writes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Asks every member, through the gateway, to drop its log up to `last`,
/// until every live one but `down` has; returns the final answer.
async fn drop_logs(c: &Cluster, down: u64, last: u64) -> Value {
    // The leader keeps the log a follower it still counts as active needs;
    // its quorum check marks the killed one inactive within an election timeout.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c
            .http()
            .post(format!("{}/v1/cluster/snapshot", c.gateway_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let answer: Value = r.json().await.unwrap();
        let live_dropped = answer["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["id"] == down || n["first_index_after"].as_u64().unwrap_or(0) > last);
        if live_dropped {
            return answer;
        }
        assert!(Instant::now() < deadline, "the log was kept: {answer}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_refusing_snapshots_over_its_limit_is_sent_them_ever_more_slowly() {
    // Proves: a follower that can only catch up by a snapshot over its
    // --max-snapshot-mb refuses each transfer; the leader sends again after
    // waits that grow (not at every heartbeat answer, dozens of times in a
    // few seconds), the follower answers /health/ready 503 naming the
    // limit, and the rest of the cluster goes on taking writes.
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut c = Cluster::start_with_args(3, &["--max-snapshot-mb", "1"])
        .await
        .unwrap();
    let follower = c.follower().await.unwrap();
    c.kill(follower).unwrap();
    // 3 MiB that no block compression shrinks below the limit.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut last = 0;
    for i in 0..48 {
        let value: String = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{:016x}", x)
            })
            .collect();
        let r = c
            .http()
            .put(format!("{}/v1/kv/big/{i:03}", c.gateway_url()))
            .body(value)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        last = r.json::<Value>().await.unwrap()["index"].as_u64().unwrap();
    }
    drop_logs(&c, follower, last).await;
    let leader = c.wait_leader(Duration::from_secs(5)).await.unwrap();

    c.start_node(follower).unwrap();
    wait_logged(
        &c,
        follower,
        "--max-snapshot-mb",
        1,
        Duration::from_secs(30),
    )
    .await;
    let refused = || {
        c.node_log(leader)
            .matches("sending snapshot failed")
            .count()
    };
    let before = refused();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let in_six_seconds = refused() - before;
    eprintln!("{in_six_seconds} snapshot sends refused in 6 s");
    // Waits of 0.25, 0.5, 1, 2 and 4 s allow at most 5 in any 6 s; at every
    // heartbeat answer it would be dozens.
    assert!(
        (1..=6).contains(&in_six_seconds),
        "{in_six_seconds} snapshot sends refused in 6 s; logs in {}",
        c.log_dir().display()
    );
    let r = c
        .http()
        .get(format!("{}/health/ready", c.node_url(follower)))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body = r.text().await.unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("--max-snapshot-mb"), "{body}");
    c.put_until_ok("big/after", "v", Duration::from_secs(5))
        .await
        .unwrap();
}
