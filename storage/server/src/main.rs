//! `strata-node`: one storage node of a Strata cluster.

use std::os::unix::process::CommandExt;

use clap::Parser;
use strata_server::telemetry::{LogFormat, Telemetry};
use strata_server::{NodeConfig, Stop};

// The request path allocates small, short-lived buffers (HTTP/2 frames,
// protobuf messages) on several threads at once: mimalloc's thread-local
// free lists serve them without the contention and consolidation passes of
// the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The node's settings, and how it logs.
#[derive(Parser)]
#[command(
    name = "strata-node",
    about = "One storage node of a Strata cluster",
    after_help = "To build a member's data directory of a new cluster from a backup (offline), \
                  run `strata-node restore FILE` with the flags the member will start with \
                  (--id, --peers, --data-dir); `strata-node restore --help` says more."
)]
struct Cli {
    #[command(flatten)]
    node: NodeConfig,
    /// How log lines are written (the level comes from STRATA_LOG or
    /// RUST_LOG). Traces are exported when OTEL_EXPORTER_OTLP_ENDPOINT is
    /// set.
    #[arg(long, env = "STRATA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// `strata-node restore FILE`: a member's data directory from a backup.
#[derive(Parser)]
#[command(
    name = "strata-node restore",
    bin_name = "strata-node restore",
    about = "Build this member's data directory of a new cluster from a backup, offline",
    long_about = "Builds the data directory of member --id of a new cluster whose members are \
                  --peers, from a backup file (`strata snapshot save`): every key with its \
                  value, create and mod index and lease, and every lease, as of the backup's \
                  raft index. Restore every member from the same file with the same --peers \
                  and its own --id and --data-dir, then start them with the same flags. The \
                  data directory must not exist or be empty. The new cluster draws a new \
                  cluster id when it first elects a leader."
)]
struct RestoreCli {
    /// The backup file.
    file: std::path::PathBuf,
    #[command(flatten)]
    node: strata_server::NodeConfig,
}

fn main() -> anyhow::Result<()> {
    if std::env::args_os().nth(1).is_some_and(|a| a == "restore") {
        let args = std::env::args_os()
            .take(1)
            .chain(std::env::args_os().skip(2));
        return restore(RestoreCli::parse_from(args));
    }
    let Cli {
        node: config,
        log_format,
    } = Cli::parse();
    let threads = config
        .io_threads
        .map_or_else(strata_server::config::default_io_threads, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?;
    let stop = runtime.block_on(async {
        // Flushes the spans still buffered when it drops, at the end of
        // this block, while the runtime still runs.
        let _telemetry = Telemetry::init(log_format, config.id)?;
        let listener = tokio::net::TcpListener::bind(config.listen).await?;
        strata_server::run(listener, config, shutdown_signal()).await
    })?;
    match stop {
        Stop::Shutdown => Ok(()),
        Stop::RestartForSpace => {
            // The same binary, arguments and environment, in this process:
            // a supervisor sees one process that recovered by itself.
            let exe = std::env::current_exe()?;
            let err = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .exec();
            Err(anyhow::anyhow!("restarting the node failed: {err}"))
        }
    }
}

fn restore(cli: RestoreCli) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let input = std::fs::File::open(&cli.file)
        .with_context(|| format!("opening {}", cli.file.display()))?;
    let restored = strata_server::restore::restore(&cli.node, std::io::BufReader::new(input))
        .with_context(|| format!("restoring {}", cli.file.display()))?;
    let members: Vec<String> = restored
        .members
        .iter()
        .map(|(id, address)| format!("{id}={address}"))
        .collect();
    println!(
        "restored member {} into {}: index {} keys {} leases {} sha256 {}; members {}",
        cli.node.id,
        cli.node.data_dir.display(),
        restored.index,
        restored.info.pairs,
        restored.info.leases,
        restored.info.sha256_hex(),
        members.join(",")
    );
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
