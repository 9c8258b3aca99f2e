//! `strata-bench`: YCSB-style load generator for Strata (gRPC or REST) and etcd, with an
//! open-loop driver, HDR histograms and a JSON summary. See `cli.rs` for the options.

#![forbid(unsafe_code)]

mod cli;
mod distribution;
mod driver;
mod keys;
mod load;
mod progress;
mod stats;
mod summary;
mod target;
mod workload;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::cli::Args;
use crate::distribution::KeyChooser;
use crate::driver::RunPlan;
use crate::keys::{KeySpace, ValuePool};
use crate::progress::Progress;
use crate::summary::{RunConfig, Summary};
use crate::target::{Target, TargetKind};
use crate::workload::Workload;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    let summary = runtime.block_on(run(&args))?;
    match args.json.as_deref() {
        Some("-") => println!("{}", serde_json::to_string_pretty(&summary)?),
        Some(path) => {
            let mut f = std::fs::File::create(path).with_context(|| format!("create {path}"))?;
            writeln!(f, "{}", serde_json::to_string_pretty(&summary)?)?;
            print!("{}", summary.human());
        }
        None => print!("{}", summary.human()),
    }
    Ok(())
}

async fn run(args: &Args) -> anyhow::Result<Summary> {
    let endpoints = args.endpoints();
    let connections = args.connections();
    if args.etcd_leader_only && args.target != TargetKind::Etcd {
        bail!("--etcd-leader-only applies to --target etcd only");
    }
    if args.request_ids && args.target != TargetKind::Grpc {
        bail!("--request-ids applies to --target grpc only");
    }
    match args.target {
        TargetKind::Grpc => {
            let t = target::grpc::GrpcTarget::connect(&endpoints, connections, args.request_ids)
                .await?;
            drive(args, endpoints, t).await
        }
        TargetKind::Rest => {
            let t = target::rest::RestTarget::new(&endpoints, connections, args.request_timeout)?;
            drive(args, endpoints, t).await
        }
        #[cfg(feature = "etcd")]
        TargetKind::Etcd => {
            let endpoints = if args.etcd_leader_only {
                vec![target::etcd::leader_endpoint(&endpoints).await?]
            } else {
                endpoints
            };
            let t =
                target::etcd::EtcdTarget::connect(&endpoints, connections, args.request_timeout)
                    .await?;
            drive(args, endpoints, t).await
        }
        #[cfg(not(feature = "etcd"))]
        TargetKind::Etcd => {
            bail!(
                "this strata-bench was built without etcd support; rebuild with `--features etcd` (needs protoc)"
            )
        }
    }
}

/// Runs the workload against `target`, which was connected to `endpoints` (recorded in the summary:
/// with `--etcd-leader-only` they are the leader's alone).
async fn drive<T: Target>(
    args: &Args,
    endpoints: Vec<String>,
    target: T,
) -> anyhow::Result<Summary> {
    let keys = KeySpace::new(&args.key_prefix, args.key_size);
    if args.records == 0 || args.records > keys.capacity() {
        bail!(
            "--records must be in [1, {}] for {}-byte keys with prefix {:?}",
            keys.capacity(),
            args.key_size,
            args.key_prefix
        );
    }
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let values = ValuePool::new(args.value_size, &mut rng);
    let visible = !args.no_progress && std::io::stderr().is_terminal();

    let target = Arc::new(target);
    let load = if args.load_only || (args.workload.needs_load() && !args.no_load) {
        if visible {
            eprintln!("loading {} records ...", args.records);
        }
        Some(
            load::load(
                Arc::clone(&target),
                &keys,
                &values,
                args.records,
                args.load_clients,
                args.load_timeout,
            )
            .await?,
        )
    } else {
        None
    };
    let target = Arc::into_inner(target).context("load workers still hold the target")?;

    let distribution = args
        .distribution
        .unwrap_or_else(|| args.workload.default_distribution());
    let workload = Workload::new(
        args.workload,
        KeyChooser::new(distribution, args.records, args.theta),
        keys,
        values,
        args.records,
        args.max_scan_len,
        args.batch_size.max(1),
    );
    let plan = RunPlan {
        workers: args.clients.max(1),
        max_ops: if args.load_only {
            0
        } else {
            args.ops.unwrap_or(u64::MAX)
        },
        duration: args.duration,
        rate_per_s: args.rate.max(0.0),
        read_consistency: args.read_consistency,
        request_timeout: args.request_timeout,
        seed: args.seed,
    };
    let label = format!("{:?}/{:?}", args.target, args.workload);
    let progress = Progress::new(&label, plan.max_ops, plan.duration, visible);
    let result = driver::run(target, workload, plan, progress.clone()).await;
    progress.finish();

    let config = RunConfig {
        target: args.target,
        endpoints,
        workload: args.workload,
        distribution,
        theta: args.theta,
        read_consistency: args.read_consistency,
        records: args.records,
        key_size_bytes: args.key_size,
        value_size_bytes: args.value_size,
        batch_size: args.batch_size.max(1),
        clients: args.clients.max(1),
        connections: args.connections(),
        target_rate_per_s: args.rate.max(0.0),
        max_ops: args.ops,
        max_duration_s: args.duration.as_secs_f64(),
    };
    Ok(Summary::new(config, load, &result))
}
