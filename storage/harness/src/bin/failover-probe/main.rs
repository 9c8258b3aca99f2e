//! Measures what a client sees when the leader dies: a put through Envoy
//! every few milliseconds (open loop: sends do not wait for answers), then
//! `kill -9` of the leader. The window of one kill is the longest gap between
//! two successful puts around it. Repeats for every kill, restarting the
//! killed node in between, and prints every window, the worst and the median.
//!
//! Every put that fails or is slow is explained: its status and body code,
//! when it was sent relative to the kill, and, from Envoy's access log
//! (joined by the put's path, unique to it), Envoy's response flags, how
//! many attempts it made and which node the last one reached. The run ends
//! with the errors counted by kind and the slowest put of every kill with
//! its cause.

mod access_log;
mod outcome;
mod soak;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use strata_harness::Cluster;
use tokio::sync::Mutex;

use outcome::{Answer, Put, Roles};

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
    /// A put slower than this is listed with its cause.
    #[arg(long, default_value_t = 150)]
    slow_ms: u64,
    /// A flag for every node, e.g. `--node-arg=--election-jitter-ticks=10`
    /// (repeatable).
    #[arg(long = "node-arg", allow_hyphen_values = true)]
    node_args: Vec<String>,
    /// Instead of killing anything: send the same puts for this many
    /// seconds and count the elections the nodes started (each node's
    /// `strata_raft_elections_total`, pre-votes included), which on a
    /// healthy cluster should be none.
    #[arg(long)]
    soak_secs: Option<u64>,
    /// Write a JSON summary here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

/// One kill: which node, the window, and every put sent around it.
struct Kill {
    killed: u64,
    window: Duration,
    puts: Vec<Put>,
}

async fn probe_one_kill(c: &mut Cluster, args: &Args, round: usize) -> Result<Kill> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(256)
        .build()?;
    let gw = c.gateway_url();
    let puts = Arc::new(Mutex::new(Vec::<(Instant, Duration, String, Answer)>::new()));
    let start = Instant::now();
    let total = Duration::from_millis(args.before_ms + args.after_ms);
    let interval = Duration::from_millis(args.interval_ms);
    let sender = {
        let puts = puts.clone();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            let mut ticker = tokio::time::interval(interval);
            let mut i = 0u64;
            while start.elapsed() < total {
                ticker.tick().await;
                let (http, gw, puts) = (http.clone(), gw.clone(), puts.clone());
                let path = format!("/v1/kv/probe/{round}/{i}");
                i += 1;
                tasks.push(tokio::spawn(async move {
                    let sent = Instant::now();
                    let r = http.put(format!("{gw}{path}")).body("x").send().await;
                    let answer = match r {
                        Ok(r) if r.status().is_success() => Answer::Ok,
                        Ok(r) => {
                            let status = r.status().as_u16();
                            let body: serde_json::Value =
                                r.json().await.unwrap_or(serde_json::Value::Null);
                            let field = |k: &str| {
                                body.get(k)
                                    .and_then(|v| v.as_str())
                                    .unwrap_or("-")
                                    .to_string()
                            };
                            Answer::Status {
                                status,
                                code: field("code"),
                                message: field("message"),
                            }
                        }
                        Err(e) => Answer::Transport(transport_kind(&e)),
                    };
                    puts.lock().await.push((sent, sent.elapsed(), path, answer));
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(args.before_ms)).await;
    let leader = c.wait_leader(Duration::from_secs(5)).await?;
    let killed_at = Instant::now();
    c.kill(leader)?;
    sender.await?;
    let raw = Arc::try_unwrap(puts)
        .map_err(|_| anyhow::anyhow!("probe tasks still running"))?
        .into_inner();
    let signed_ms = |t: Instant| {
        if t >= killed_at {
            (t - killed_at).as_secs_f64() * 1e3
        } else {
            -(killed_at - t).as_secs_f64() * 1e3
        }
    };
    let mut ok_at: Vec<Instant> = Vec::new();
    let puts: Vec<Put> = raw
        .into_iter()
        .map(|(sent, latency, path, answer)| {
            if matches!(answer, Answer::Ok) {
                ok_at.push(sent + latency);
            }
            Put {
                path,
                sent_ms: signed_ms(sent),
                latency_ms: latency.as_secs_f64() * 1e3,
                answer,
                envoy: None,
            }
        })
        .collect();
    ok_at.sort();
    let window = ok_at
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .context("no successful puts at all")?;
    c.start_node(leader)?;
    // Let the restarted node catch up before the next round.
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.wait_gateway_leader(Duration::from_secs(10)).await?;
    Ok(Kill {
        killed: leader,
        window,
        puts,
    })
}

/// A client-side failure, by reqwest's own classes.
fn transport_kind(e: &reqwest::Error) -> String {
    let class = if e.is_timeout() {
        "client timeout"
    } else if e.is_connect() {
        "connect"
    } else if e.is_body() || e.is_decode() {
        "body"
    } else if e.is_request() {
        "request"
    } else {
        "other"
    };
    // The innermost cause names what failed (reset, refused, timed out);
    // reqwest's own message names the put's URL, unique to it.
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    if e.is_timeout() {
        return class.to_string();
    }
    format!("{class}: {cause}")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let node_args: Vec<&str> = args.node_args.iter().map(String::as_str).collect();
    let mut c = Cluster::start_with_args(3, &node_args).await?;
    if let Some(secs) = args.soak_secs {
        return soak::run(
            &c,
            Duration::from_secs(secs),
            Duration::from_millis(args.interval_ms),
        )
        .await;
    }
    let addresses: HashMap<String, u64> = c
        .node_ids()
        .into_iter()
        .map(|id| (c.node_url(id).trim_start_matches("http://").to_string(), id))
        .collect();
    let mut kills = Vec::new();
    println!("kill  node  window_ms  ok_puts  503s  504s  other_errors  slowest_put_ms");
    for round in 0..args.kills {
        let k = probe_one_kill(&mut c, &args, round).await?;
        let count = |f: &dyn Fn(&Answer) -> bool| k.puts.iter().filter(|p| f(&p.answer)).count();
        println!(
            "{:>4}  {:>4}  {:>9.1}  {:>7}  {:>4}  {:>4}  {:>12}  {:>14.1}",
            round + 1,
            k.killed,
            ms(k.window),
            count(&|a| matches!(a, Answer::Ok)),
            count(&|a| matches!(a, Answer::Status { status: 503, .. })),
            count(&|a| matches!(a, Answer::Status { status: 504, .. })),
            count(&|a| matches!(a, Answer::Transport(_))
                || matches!(a, Answer::Status { status, .. } if *status != 503 && *status != 504)),
            k.puts.iter().map(|p| p.latency_ms).fold(0.0, f64::max),
        );
        kills.push(k);
    }
    // Envoy writes its access log in batches (every second by default).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let envoy = access_log::read(&c.log_dir().join("envoy-access.log"))?;
    for k in &mut kills {
        for p in &mut k.puts {
            p.envoy = envoy.get(&p.path).cloned();
        }
    }

    let windows: Vec<Duration> = kills.iter().map(|k| k.window).collect();
    let mut sorted = windows.clone();
    sorted.sort();
    let worst = sorted.last().copied().unwrap_or_default();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();

    // Errors by kind, over every kill: how many, in how many kills, and
    // when they were sent relative to the kill.
    let mut kinds: BTreeMap<String, (usize, usize, f64, f64)> = BTreeMap::new();
    for k in &kills {
        let roles = Roles {
            killed: k.killed,
            addresses: &addresses,
        };
        let mut seen_here = Vec::new();
        for p in &k.puts {
            let Some(kind) = p.error_kind(&roles) else {
                continue;
            };
            let e = kinds
                .entry(kind.clone())
                .or_insert((0, 0, f64::MAX, f64::MIN));
            e.0 += 1;
            e.2 = e.2.min(p.sent_ms);
            e.3 = e.3.max(p.sent_ms);
            if !seen_here.contains(&kind) {
                e.1 += 1;
                seen_here.push(kind);
            }
        }
    }
    println!("\nerrors by kind (count, kills, sent relative to the kill):");
    if kinds.is_empty() {
        println!("  none");
    }
    for (kind, (n, in_kills, first, last)) in &kinds {
        println!("  {n:>4} in {in_kills:>2} kill(s), sent {first:+.0}..{last:+.0} ms: {kind}");
    }

    println!(
        "\nslowest put of every kill (and how many took over {} ms):",
        args.slow_ms
    );
    let mut slow_json = Vec::new();
    for (i, k) in kills.iter().enumerate() {
        let roles = Roles {
            killed: k.killed,
            addresses: &addresses,
        };
        let slowest = k.puts.iter().map(|p| p.latency_ms).fold(0.0, f64::max);
        let over = k
            .puts
            .iter()
            .filter(|p| p.latency_ms > args.slow_ms as f64)
            .count();
        if let Some(p) = k.puts.iter().find(|p| p.latency_ms == slowest) {
            let cause = p.cause(&roles);
            println!(
                "  kill {:>2}: {:>6.1} ms ({over} over), sent {:+.0} ms: {cause}",
                i + 1,
                p.latency_ms,
                p.sent_ms
            );
            slow_json.push(serde_json::json!({
                "kill": i + 1, "latency_ms": p.latency_ms, "sent_ms": p.sent_ms, "cause": cause,
                "puts_over_slow_ms": over,
            }));
        }
    }

    println!(
        "\nworst {:.1} ms, median {:.1} ms over {} kills",
        ms(worst),
        ms(median),
        windows.len()
    );
    if let Some(path) = &args.json {
        let summary = serde_json::json!({
            "windows_ms": windows.iter().map(|w| ms(*w)).collect::<Vec<_>>(),
            "worst_ms": ms(worst),
            "median_ms": ms(median),
            "errors": kinds.iter().map(|(kind, (n, in_kills, first, last))| serde_json::json!({
                "kind": kind, "count": n, "kills": in_kills, "first_sent_ms": first, "last_sent_ms": last,
            })).collect::<Vec<_>>(),
            "slow_puts": slow_json,
        });
        std::fs::write(path, serde_json::to_string_pretty(&summary)?)?;
    }
    Ok(())
}
