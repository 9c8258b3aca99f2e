//! `strata-node`: one storage node of a Strata cluster.

use std::os::unix::process::CommandExt;

use clap::Parser;
use strata_server::{NodeConfig, Stop};
use tracing_subscriber::EnvFilter;

// The request path allocates small, short-lived buffers (HTTP/2 frames,
// protobuf messages) on several threads at once: mimalloc's thread-local
// free lists serve them without the contention and consolidation passes of
// the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("STRATA_LOG")
                .unwrap_or_else(|_| EnvFilter::new("info,raft=warn")),
        )
        .init();
    let config = NodeConfig::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = config.io_threads {
        runtime.worker_threads(threads.into());
    }
    let stop = runtime.enable_all().build()?.block_on(async {
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
