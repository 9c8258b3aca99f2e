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

/// One trace as Jaeger's query API answers it (`/api/traces…`), written as
/// a tree for a terminal: each span under its parent, with its start
/// (from the trace's first span) and duration in milliseconds, and the
/// service (with the node's id) that recorded it.
pub fn format_trace(trace: &serde_json::Value) -> Result<String> {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;

    let spans = trace["spans"].as_array().context("a trace without spans")?;
    let service = |span: &serde_json::Value| {
        let process = &trace["processes"][span["processID"].as_str().unwrap_or_default()];
        let name = process["serviceName"].as_str().unwrap_or("?").to_string();
        let node = process["tags"].as_array().and_then(|tags| {
            tags.iter()
                .find(|t| t["key"] == "strata.node_id")
                .and_then(|t| t["value"].as_i64())
        });
        match node {
            Some(id) => format!("{name} {id}"),
            None => name,
        }
    };
    let id = |span: &serde_json::Value| span["spanID"].as_str().unwrap_or_default().to_string();
    let parent = |span: &serde_json::Value| {
        span["references"]
            .as_array()
            .and_then(|refs| refs.first())
            .and_then(|r| r["spanID"].as_str())
            .map(str::to_string)
    };
    let start = |span: &serde_json::Value| span["startTime"].as_u64().unwrap_or(0);
    let first = spans.iter().map(start).min().unwrap_or(0);
    let known: Vec<String> = spans.iter().map(id).collect();
    // Children by parent, in start order; a span whose parent is missing
    // is shown as a root.
    let mut children: BTreeMap<Option<String>, Vec<&serde_json::Value>> = BTreeMap::new();
    for span in spans {
        let p = parent(span).filter(|p| known.contains(p));
        children.entry(p).or_default().push(span);
    }
    for list in children.values_mut() {
        list.sort_by_key(|s| start(s));
    }
    let mut out = format!(
        "trace {} ({} spans)\n{:>10} {:>10}  span\n",
        trace["traceID"].as_str().unwrap_or("?"),
        spans.len(),
        "start ms",
        "ms"
    );
    let mut stack: Vec<(usize, &serde_json::Value)> = children
        .get(&None)
        .map(|roots| roots.iter().rev().map(|s| (0, *s)).collect())
        .unwrap_or_default();
    while let Some((depth, span)) = stack.pop() {
        let _ = writeln!(
            out,
            "{:>10.3} {:>10.3}  {}{} [{}]",
            (start(span) - first) as f64 / 1000.0,
            span["duration"].as_u64().unwrap_or(0) as f64 / 1000.0,
            "  ".repeat(depth),
            span["operationName"].as_str().unwrap_or("?"),
            service(span)
        );
        if let Some(kids) = children.get(&Some(id(span))) {
            stack.extend(kids.iter().rev().map(|k| (depth + 1, *k)));
        }
    }
    Ok(out)
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

    #[test]
    fn a_trace_prints_as_a_tree_in_start_order() {
        // Proves each span is printed under its parent, children in the
        // order they started, with times from the trace's first span, and
        // the node's id beside its service; a span whose parent never
        // arrived is still printed, as a root.
        let trace = serde_json::json!({
            "traceID": "t1",
            "processes": {
                "p1": {"serviceName": "strata-gateway", "tags": []},
                "p2": {"serviceName": "strata-node",
                       "tags": [{"key": "strata.node_id", "type": "int64", "value": 2}]},
            },
            "spans": [
                {"spanID": "c", "operationName": "raft.apply", "processID": "p2",
                 "startTime": 1_003_000, "duration": 100, "references": [{"spanID": "b"}]},
                {"spanID": "a", "operationName": "ingress", "processID": "p1",
                 "startTime": 1_000_000, "duration": 5_000, "references": []},
                {"spanID": "d", "operationName": "raft.append", "processID": "p2",
                 "startTime": 1_002_000, "duration": 900, "references": [{"spanID": "b"}]},
                {"spanID": "b", "operationName": "PUT /v1/kv/{key}", "processID": "p2",
                 "startTime": 1_001_000, "duration": 3_500, "references": [{"spanID": "a"}]},
                {"spanID": "e", "operationName": "orphan", "processID": "p2",
                 "startTime": 1_004_000, "duration": 1, "references": [{"spanID": "gone"}]},
            ]
        });
        let text = format_trace(&trace).unwrap();
        let lines: Vec<&str> = text.lines().skip(2).map(str::trim_start).collect();
        assert_eq!(
            lines,
            [
                "0.000      5.000  ingress [strata-gateway]",
                "1.000      3.500    PUT /v1/kv/{key} [strata-node 2]",
                "2.000      0.900      raft.append [strata-node 2]",
                "3.000      0.100      raft.apply [strata-node 2]",
                "4.000      0.001  orphan [strata-node 2]",
            ],
            "{text}"
        );
        assert!(text.starts_with("trace t1 (5 spans)"), "{text}");
    }
}
