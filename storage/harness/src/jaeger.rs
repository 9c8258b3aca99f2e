//! The trace viewer `strata-cluster up --traces` runs beside a local
//! cluster: Jaeger v2 (the all-in-one built on the OpenTelemetry Collector),
//! receiving OTLP/gRPC from Envoy and every node, keeping the traces in
//! memory, and serving its UI. Its config is written into the run directory
//! at start, like Envoy's; `./dev setup-jaeger` builds the binary.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::command::CommandLine;

/// Traces the viewer keeps; older ones are dropped. A demo's worth, in a
/// bounded amount of memory.
pub const MAX_TRACES: u32 = 10_000;

/// Where the viewer runs; every address is `host:port`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceViewer {
    /// The `jaeger` binary.
    pub bin: PathBuf,
    /// Its OTLP/gRPC receiver, where Envoy and the nodes export.
    pub otlp: String,
    /// Its UI and HTTP query API.
    pub ui: String,
    /// Its gRPC query API (not used here, but it always listens).
    pub query_grpc: String,
}

impl TraceViewer {
    /// The UI's address for a browser.
    pub fn ui_url(&self) -> String {
        format!("http://{}/", self.ui)
    }

    /// The config: an OTLP/gRPC receiver, the in-memory store, the query
    /// service and UI, nothing else listening (the Collector's own metrics
    /// are off, so two viewers on one host do not compete for a port).
    pub fn config(&self) -> String {
        format!(
            "# Written by strata-cluster (storage/harness/src/jaeger.rs) at start.
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memory_store:
        memory:
          max_traces: {max_traces}
  jaeger_query:
    storage:
      traces: memory_store
    enable_tracing: false
    http:
      endpoint: \"{ui}\"
    grpc:
      endpoint: \"{query_grpc}\"
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: \"{otlp}\"
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: memory_store
",
            max_traces = MAX_TRACES,
            ui = self.ui,
            query_grpc = self.query_grpc,
            otlp = self.otlp,
        )
    }

    /// Writes the config to `path`.
    pub fn write_config(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.config()).with_context(|| format!("writing {}", path.display()))
    }

    /// The command line serving the config at `config`.
    pub fn command_line(&self, config: &Path) -> CommandLine {
        crate::command::jaeger(&self.bin, config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_names_the_layouts_addresses_and_no_other() {
        // Proves the viewer's receiver, UI and query API take the addresses
        // of the layout, and that the config names no other address.
        let viewer = TraceViewer {
            bin: "jaeger".into(),
            otlp: "127.0.0.1:24317".into(),
            ui: "127.0.0.1:26686".into(),
            query_grpc: "127.0.0.1:26685".into(),
        };
        let text = viewer.config();
        for addr in ["127.0.0.1:24317", "127.0.0.1:26686", "127.0.0.1:26685"] {
            assert!(text.contains(&format!("endpoint: \"{addr}\"")), "{addr}");
        }
        let endpoints = text.matches("endpoint:").count();
        assert_eq!(endpoints, 3, "{text}");
        assert_eq!(viewer.ui_url(), "http://127.0.0.1:26686/");
    }
}
