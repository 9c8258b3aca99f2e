//! Trace context carried inside raft entries, so the spans every member
//! records for an entry (append + fsync, apply) join the trace of the
//! request that proposed it.
//!
//! Only a proposal made inside a sampled span carries one: with tracing off
//! (no OpenTelemetry layer installed) or for an unsampled request, entries
//! are written exactly as before and nothing is decoded for them.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use raft::eraftpb::{Entry, EntryType};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::command::Proposal;

/// Bytes of an encoded [`TraceParent`]: trace id, span id, flags.
pub(crate) const ENCODED_LEN: usize = 16 + 8 + 1;

/// The span a raft entry was proposed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// The current span's position, if it belongs to a sampled trace.
    pub fn current() -> Option<TraceParent> {
        let context = tracing::Span::current().context();
        let span = context.span();
        let sc = span.span_context();
        (sc.is_valid() && sc.is_sampled()).then(|| TraceParent {
            trace_id: sc.trace_id().to_bytes(),
            span_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
        })
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.trace_id);
        out.extend_from_slice(&self.span_id);
        out.push(self.flags);
    }

    /// Reads an encoded context from the start of `b`.
    pub(crate) fn decode(b: &[u8]) -> Option<TraceParent> {
        let b = b.get(..ENCODED_LEN)?;
        Some(TraceParent {
            trace_id: b[..16].try_into().ok()?,
            span_id: b[16..24].try_into().ok()?,
            flags: b[24],
        })
    }

    /// A span named `name` whose parent is this position. Its fields are
    /// recorded only when a subscriber wants them.
    pub(crate) fn child(&self, name: &'static str, index: u64) -> tracing::Span {
        let span = tracing::info_span!("raft", otel.name = name, raft.index = index);
        let parent = SpanContext::new(
            TraceId::from_bytes(self.trace_id),
            SpanId::from_bytes(self.span_id),
            TraceFlags::new(self.flags),
            true,
            TraceState::default(),
        );
        // Fails only when no OpenTelemetry layer is installed, and then
        // there is no trace to join.
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(parent));
        span
    }
}

/// A span named `name` for each entry of `entries` that carries a trace
/// context, each a child of the span that proposed it; they end when the
/// returned list is dropped.
pub(crate) fn spans(entries: &[Entry], name: &'static str) -> Vec<tracing::Span> {
    entries
        .iter()
        .filter(|e| e.get_entry_type() == EntryType::EntryNormal)
        .filter_map(|e| Proposal::trace_of(&e.data).map(|t| t.child(name, e.index)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that a context survives its encoding, and that a short buffer
    // decodes to nothing rather than to garbage.
    #[test]
    fn encoded_context_round_trips_and_short_input_is_refused() {
        let t = TraceParent {
            trace_id: [7; 16],
            span_id: [9; 8],
            flags: 1,
        };
        let mut out = Vec::new();
        t.encode(&mut out);
        assert_eq!(out.len(), ENCODED_LEN);
        assert_eq!(TraceParent::decode(&out), Some(t));
        assert_eq!(TraceParent::decode(&out[..ENCODED_LEN - 1]), None);
    }

    // Proves that outside a sampled span nothing is carried.
    #[test]
    fn no_context_outside_a_trace() {
        assert_eq!(TraceParent::current(), None);
    }
}
