//! `strata-node`: one storage node of a Strata cluster.

use std::os::unix::process::CommandExt;

use clap::Parser;
use strata_server::{NodeConfig, Stop};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("STRATA_LOG")
                .unwrap_or_else(|_| EnvFilter::new("info,raft=warn")),
        )
        .init();
    let config = NodeConfig::parse();
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    match strata_server::run(listener, config, shutdown_signal()).await? {
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
