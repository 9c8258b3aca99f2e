//! Measures what a client sees when the leader dies: a put through Envoy
//! every few milliseconds (open loop: sends do not wait for answers), then
//! `kill -9` of the leader. The window of one kill is the longest gap between
//! two successful puts around it. Repeats for every kill, restarting the
//! killed node in between, and prints every window, the worst and the median.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use reqwest::StatusCode;
use strata_harness::Cluster;
use tokio::sync::Mutex;

#[derive(Parser)]
struct Args {
    /// How many times to kill the leader.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// Milliseconds between two puts.
    #[arg(long, default_value_t = 5)]
    interval_ms: u64,
    /// Probe time before and after each kill, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    before_ms: u64,
    #[arg(long, default_value_t = 3000)]
    after_ms: u64,
    /// Write a JSON summary here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(Default)]
struct Outcomes {
    /// Completion times (since the probe start) of successful puts.
    ok_at: Vec<Duration>,
    unavailable: usize,
    other_errors: usize,
    slowest: Duration,
}

struct KillResult {
    window: Duration,
    outcomes: Outcomes,
}

async fn probe_one_kill(c: &mut Cluster, args: &Args, round: usize) -> Result<KillResult> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(256)
        .build()?;
    let gw = c.gateway_url();
    let outcomes = Arc::new(Mutex::new(Outcomes::default()));
    let start = Instant::now();
    let total = Duration::from_millis(args.before_ms + args.after_ms);
    let interval = Duration::from_millis(args.interval_ms);
    let sender = {
        let outcomes = outcomes.clone();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            let mut ticker = tokio::time::interval(interval);
            let mut i = 0u64;
            while start.elapsed() < total {
                ticker.tick().await;
                let (http, gw, outcomes) = (http.clone(), gw.clone(), outcomes.clone());
                let key = format!("probe/{round}/{i}");
                i += 1;
                tasks.push(tokio::spawn(async move {
                    let sent = Instant::now();
                    let r = http.put(format!("{gw}/v1/kv/{key}")).body("x").send().await;
                    let mut o = outcomes.lock().await;
                    o.slowest = o.slowest.max(sent.elapsed());
                    match r.map(|r| r.status()) {
                        Ok(StatusCode::OK) => o.ok_at.push(start.elapsed()),
                        Ok(StatusCode::SERVICE_UNAVAILABLE) => o.unavailable += 1,
                        _ => o.other_errors += 1,
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(args.before_ms)).await;
    let leader = c.wait_leader(Duration::from_secs(5)).await?;
    c.kill(leader)?;
    sender.await?;
    let mut o = Arc::try_unwrap(outcomes)
        .map_err(|_| anyhow::anyhow!("probe tasks still running"))?
        .into_inner();
    o.ok_at.sort();
    let window = o
        .ok_at
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .context("no successful puts at all")?;
    c.start_node(leader)?;
    // Let the restarted node catch up before the next round.
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.wait_gateway_leader(Duration::from_secs(10)).await?;
    Ok(KillResult {
        window,
        outcomes: o,
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut c = Cluster::start(3).await?;
    let mut windows = Vec::new();
    println!("kill  window_ms  ok_puts  503s  other_errors  slowest_put_ms");
    for round in 0..args.kills {
        let r = probe_one_kill(&mut c, &args, round).await?;
        println!(
            "{:>4}  {:>9.1}  {:>7}  {:>4}  {:>12}  {:>14.1}",
            round + 1,
            r.window.as_secs_f64() * 1e3,
            r.outcomes.ok_at.len(),
            r.outcomes.unavailable,
            r.outcomes.other_errors,
            r.outcomes.slowest.as_secs_f64() * 1e3
        );
        windows.push(r.window);
    }
    let mut sorted = windows.clone();
    sorted.sort();
    let worst = sorted.last().copied().unwrap_or_default();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    println!(
        "worst {:.1} ms, median {:.1} ms over {} kills",
        worst.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
        windows.len()
    );
    if let Some(path) = &args.json {
        let ms: Vec<f64> = windows.iter().map(|w| w.as_secs_f64() * 1e3).collect();
        let summary = serde_json::json!({
            "windows_ms": ms,
            "worst_ms": worst.as_secs_f64() * 1e3,
            "median_ms": median.as_secs_f64() * 1e3,
        });
        std::fs::write(path, serde_json::to_string_pretty(&summary)?)?;
    }
    Ok(())
}
