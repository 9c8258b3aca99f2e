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
#[command(name = "strata-node", about = "One storage node of a Strata cluster")]
struct Cli {
    #[command(flatten)]
    node: NodeConfig,
    /// How log lines are written (the level comes from STRATA_LOG or
    /// RUST_LOG). Traces are exported when OTEL_EXPORTER_OTLP_ENDPOINT is
    /// set.
    #[arg(long, env = "STRATA_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

fn main() -> anyhow::Result<()> {
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

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
