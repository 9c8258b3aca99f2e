//! The probe's soak mode: the same open-loop puts, no kills, and the
//! elections the nodes started meanwhile. A healthy cluster starts none;
//! one started anyway (a follower that missed its leader's heartbeats on a
//! busy host) is what a shorter or narrower election timeout risks.

use std::time::{Duration, Instant};

use anyhow::Result;
use strata_harness::Cluster;

/// Elections `id` has started so far: every series of its
/// `strata_raft_elections_total` (by reason), pre-votes included.
async fn elections(c: &Cluster, id: u64) -> f64 {
    c.scrape(id)
        .await
        .lines()
        .filter(|l| l.starts_with("strata_raft_elections_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

pub async fn run(c: &Cluster, length: Duration, interval: Duration) -> Result<()> {
    let ids = c.node_ids();
    let mut before = Vec::new();
    for &id in &ids {
        before.push(elections(c, id).await);
    }
    let leader = c.wait_leader(Duration::from_secs(5)).await?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?;
    let gw = c.gateway_url();
    let start = Instant::now();
    let mut ticker = tokio::time::interval(interval);
    let mut tasks = tokio::task::JoinSet::new();
    let (mut sent, mut ok, mut failed) = (0u64, 0u64, 0u64);
    while start.elapsed() < length {
        ticker.tick().await;
        let (http, url) = (http.clone(), format!("{gw}/v1/kv/soak/{}", sent % 10_000));
        sent += 1;
        tasks.spawn(async move {
            matches!(http.put(url).body("x").send().await, Ok(r) if r.status().is_success())
        });
        while let Some(done) = tasks.try_join_next() {
            if done.unwrap_or(false) {
                ok += 1
            } else {
                failed += 1
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        if done.unwrap_or(false) {
            ok += 1
        } else {
            failed += 1
        }
    }
    let mut started = 0.0;
    for (&id, b) in ids.iter().zip(before) {
        let n = elections(c, id).await - b;
        println!("node {id}: {n} election(s) started");
        started += n;
    }
    let leader_after = c.wait_leader(Duration::from_secs(5)).await?;
    println!(
        "soak of {:.0} s: {sent} puts ({ok} ok, {failed} not), {started} election(s) started, \
         leader {leader} before and {leader_after} after",
        length.as_secs_f64()
    );
    Ok(())
}
