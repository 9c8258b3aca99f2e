//! The bodies of strata-raft's fuzz targets. Each takes arbitrary bytes,
//! must never panic (other than by the assertions below), and checks that
//! whatever decodes re-encodes to what was decoded. The libFuzzer targets in
//! `fuzz_targets/` (nightly, cargo-fuzz) and the stable seeded smoke in
//! `tests/fuzz_smoke.rs` call exactly these functions.

use strata_raft::command::Proposal;
use strata_raft::log::record;

/// Raft log record framing: walking arbitrary bytes as a segment (newest or
/// sealed) yields contiguous records inside the buffer, each of which
/// re-encodes to the same bytes when its kind is known, and the reader's
/// end is the end of the last record.
pub fn record_decode(data: &[u8]) {
    for tolerate_torn_tail in [true, false] {
        let mut reader = record::reader(data, tolerate_torn_tail);
        let mut next = 0u64;
        for rec in &mut reader {
            let Ok(rec) = rec else { break };
            assert_eq!(rec.offset, next, "records are contiguous");
            let end = rec.end();
            assert!(end <= data.len() as u64, "record runs past the buffer");
            if let Ok((kind, body)) = record::decode_payload(rec.payload) {
                let mut again = Vec::new();
                record::encode(kind, body, &mut again);
                assert_eq!(
                    &again[..],
                    &data[rec.offset as usize..end as usize],
                    "record does not round-trip"
                );
            }
            next = end;
        }
        if let Some(end) = reader.end() {
            assert_eq!(
                end.valid_len, next,
                "the valid prefix ends at the last record"
            );
            assert_eq!(end.torn_tail, next < data.len() as u64);
        }
    }
}

/// Command decoding: the encoding is canonical, so whatever decodes
/// re-encodes, with the trace context it carried, to exactly the input.
pub fn proposal_decode(data: &[u8]) {
    if let Ok(p) = Proposal::decode(data) {
        let trace = Proposal::trace_of(data);
        assert_eq!(
            p.encode_traced(trace.as_ref()),
            data,
            "proposal does not round-trip"
        );
    }
}

/// Raft message decoding: what decodes re-encodes, and decodes back to an
/// equal message. (Not byte equality: rust-protobuf keeps unknown fields in
/// a hash map, so their order on re-encoding is not fixed.)
pub fn message_decode(data: &[u8]) {
    if let Ok(m) = strata_raft::decode_message(data) {
        let once = strata_raft::encode_message(&m);
        let m2 = strata_raft::decode_message(&once).expect("re-encoded message decodes");
        assert_eq!(m2, m, "message does not round-trip");
    }
}
