//! The node's latest slow requests: each API request answered after the
//! threshold (`--slow-request-ms`), with the trace it belongs to, so that
//! an operator can go from "this request was slow" to its trace. Kept in a
//! bounded list, like the engine's and raft's recent activity, and carried
//! by the stats (`Cluster/LocalStats`, the `slow_requests` of each node).

use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::SpanContext;
use parking_lot::Mutex;
use strata_proto::v1::SlowRequest;

use crate::route::{Protocol, Route};

/// How many slow requests are kept; older ones fall off.
pub const KEPT: usize = 64;

/// The default threshold: well above a healthy write's commit on a local
/// disk (a few milliseconds), well below the 4 s request timeout.
pub const DEFAULT_THRESHOLD: Duration = Duration::from_millis(100);

/// A bounded list of the latest requests answered after `threshold`,
/// oldest first.
pub struct SlowRequests {
    threshold: Duration,
    /// Where a trace can be seen, `{trace_id}` standing for its id.
    link: Option<String>,
    recent: Mutex<VecDeque<SlowRequest>>,
}

/// How a request was answered, as far as the list keeps it.
pub struct Answered<'a> {
    pub route: &'a Route,
    pub status: u16,
    /// The gRPC status, when the answer's headers carry it.
    pub grpc_status: Option<&'a str>,
    pub elapsed: Duration,
    /// The trace the request belongs to, if any.
    pub trace: Option<&'a SpanContext>,
}

impl SlowRequests {
    /// Keeps what takes `threshold` or longer; with a trace `link` (a URL
    /// in which `{trace_id}` stands for a trace's id), a sampled request's
    /// trace is linked.
    pub fn new(threshold: Duration, link: Option<String>) -> Self {
        SlowRequests {
            threshold,
            link,
            recent: Mutex::new(VecDeque::with_capacity(KEPT)),
        }
    }

    /// Keeps `answered` if it took the threshold or longer.
    pub fn note(&self, answered: Answered<'_>) {
        if answered.elapsed < self.threshold {
            return;
        }
        let trace = answered.trace.filter(|t| t.is_valid());
        let sampled = trace.is_some_and(SpanContext::is_sampled);
        let trace_id = trace.map(|t| t.trace_id().to_string()).unwrap_or_default();
        let trace_url = match &self.link {
            Some(link) if sampled => link.replace("{trace_id}", &trace_id),
            _ => String::new(),
        };
        let slow = SlowRequest {
            at_ms: now_ms(),
            route: answered.route.name.clone(),
            protocol: match answered.route.protocol {
                Protocol::rest => "rest",
                Protocol::grpc => "grpc",
            }
            .into(),
            status: answered.status.into(),
            grpc_status: answered.grpc_status.unwrap_or_default().into(),
            duration_us: u64::try_from(answered.elapsed.as_micros()).unwrap_or(u64::MAX),
            trace_id,
            sampled,
            trace_url,
        };
        let mut recent = self.recent.lock();
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back(slow);
    }

    /// What is kept, oldest first.
    pub fn recent(&self) -> Vec<SlowRequest> {
        self.recent.lock().iter().cloned().collect()
    }
}

impl Default for SlowRequests {
    fn default() -> Self {
        SlowRequests::new(DEFAULT_THRESHOLD, None)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};

    use super::*;

    fn route() -> Route {
        Route {
            protocol: Protocol::rest,
            name: "PUT /v1/kv/{key}".into(),
        }
    }

    fn answered<'a>(route: &'a Route, ms: u64, trace: Option<&'a SpanContext>) -> Answered<'a> {
        Answered {
            route,
            status: 200,
            grpc_status: None,
            elapsed: Duration::from_millis(ms),
            trace,
        }
    }

    #[test]
    fn keeps_what_took_the_threshold_with_its_trace_and_the_latest_only() {
        // Proves: a request under the threshold is not kept, one at it is,
        // with its route, duration and trace (id and sampling), and the list
        // keeps the latest KEPT.
        let slow = SlowRequests::new(
            Duration::from_millis(100),
            Some("http://v:16686/trace/{trace_id}".into()),
        );
        let route = route();
        let trace = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        slow.note(answered(&route, 99, Some(&trace)));
        assert!(slow.recent().is_empty());
        slow.note(answered(&route, 100, Some(&trace)));
        let kept = slow.recent();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].route, "PUT /v1/kv/{key}");
        assert_eq!(kept[0].protocol, "rest");
        assert_eq!(kept[0].duration_us, 100_000);
        assert_eq!(kept[0].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(kept[0].sampled);
        assert_eq!(
            kept[0].trace_url,
            "http://v:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736"
        );

        for ms in 0..KEPT as u64 + 5 {
            slow.note(answered(&route, 1_000 + ms, None));
        }
        let kept = slow.recent();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept[0].duration_us, 1_005_000, "the oldest fell off");
        assert_eq!(kept[KEPT - 1].trace_id, "", "no trace, no id");
        assert!(!kept[KEPT - 1].sampled);
        assert_eq!(kept[KEPT - 1].trace_url, "", "no trace, no link");
    }
}
