//! `strata-node`: one storage node of a Strata cluster.

use clap::Parser;
use strata_server::NodeConfig;
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
    strata_server::run(listener, config, shutdown_signal()).await
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
