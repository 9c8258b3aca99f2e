//! The bodies of strata-raft's fuzz targets. Each takes arbitrary bytes,
//! must never panic (other than by the assertions below), and checks that
//! whatever decodes re-encodes to what was decoded. The libFuzzer targets in
//! `fuzz_targets/` (nightly, cargo-fuzz) and the stable seeded smoke in
//! `tests/fuzz_smoke.rs` call exactly these functions.

use strata_raft::command::Proposal;
use strata_raft::log::record::{self, Decoded, HEADER_BYTES};

/// Raft log record framing: a decoded record re-encodes to the same bytes,
/// and walking a buffer record by record always makes progress.
pub fn record_decode(data: &[u8]) {
    let mut offset = 0;
    while offset < data.len() {
        match record::decode(&data[offset..]) {
            Decoded::Record {
                kind,
                payload,
                size,
            } => {
                assert_eq!(
                    size,
                    HEADER_BYTES + payload.len(),
                    "size disagrees with payload"
                );
                assert!(offset + size <= data.len(), "record runs past the buffer");
                let mut again = Vec::new();
                record::encode(kind, payload, &mut again);
                assert_eq!(
                    &again[..],
                    &data[offset..offset + size],
                    "record does not round-trip"
                );
                offset += size;
            }
            Decoded::Incomplete | Decoded::Invalid(_) => break,
        }
    }
}

/// Command decoding: the encoding is canonical, so whatever decodes
/// re-encodes to exactly the input.
pub fn proposal_decode(data: &[u8]) {
    if let Ok(p) = Proposal::decode(data) {
        assert_eq!(p.encode(), data, "proposal does not round-trip");
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
