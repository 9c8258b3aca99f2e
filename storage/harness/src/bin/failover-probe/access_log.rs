//! Envoy's side of each probe put: its access log line (the harness's
//! cluster writes one JSON object a request), found by the put's path,
//! which is unique to the put.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

/// What Envoy recorded of one request.
#[derive(Debug, Clone, Default)]
pub struct EnvoyRecord {
    /// Envoy's response flags (`UC`, `UF`, `URX`, ...), `-` when none.
    pub flags: String,
    /// `%RESPONSE_CODE_DETAILS%`: who made the answer and why.
    pub details: String,
    /// How many attempts Envoy made upstream.
    pub attempts: u32,
    /// The host of the last attempt (`127.0.0.1:PORT`).
    pub upstream: String,
    /// The whole request inside Envoy, every attempt and back-off.
    pub duration_ms: Option<f64>,
}

/// Every line of `path`, by request path. Lines that are not JSON (none
/// should be) are skipped; a missing file is an error, since without it
/// nothing can be classified.
pub fn read(path: &Path) -> Result<HashMap<String, EnvoyRecord>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading Envoy's access log {}", path.display()))?;
    let mut records = HashMap::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(req_path) = v.get("path").and_then(Value::as_str) else {
            continue;
        };
        records.insert(req_path.to_string(), record(&v));
    }
    Ok(records)
}

fn record(v: &Value) -> EnvoyRecord {
    let text = |key: &str| match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let number = |key: &str| text(key).parse::<f64>().ok();
    EnvoyRecord {
        flags: text("flags"),
        details: text("details"),
        attempts: number("attempts").map_or(0, |a| a as u32),
        upstream: text("upstream"),
        duration_ms: number("duration_ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_line_as_the_gateway_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        std::fs::write(
            &path,
            concat!(
                r#"{"path":"/v1/kv/probe/0/7","status":504,"flags":"UC","details":"upstream_reset_before_response_started{connection_termination}","#,
                r#""attempts":1,"upstream":"127.0.0.1:20001","duration_ms":3,"upstream_ms":null}"#,
                "\nnot json\n"
            ),
        )
        .unwrap();
        let records = read(&path).unwrap();
        let r = &records["/v1/kv/probe/0/7"];
        assert_eq!(r.flags, "UC");
        assert_eq!(r.attempts, 1);
        assert_eq!(r.upstream, "127.0.0.1:20001");
        assert_eq!(r.duration_ms, Some(3.0));
        assert_eq!(records.len(), 1);
    }
}
