//! `GET /v1/backup`: the whole key space as of one read, in the backup
//! format.

use axum::http::{Method, StatusCode};
use bytes::Bytes;

use crate::support::{assert_documented, call, document, one_node};
use strata_server::config::Limits;

#[tokio::test]
async fn a_backup_holds_every_key_as_of_its_index() {
    // Proves: the REST backup is a whole file in the backup format, with
    // every key and value in order, at an index at least that of the last
    // acknowledged write, and documented as the OpenAPI says.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let mut last = 0;
    for (k, v) in [("b", "2"), ("a", "1"), ("c", "")] {
        let a = call(app, Method::PUT, &format!("/v1/kv/{k}"), &[], v.to_string()).await;
        last = a.json()["index"].as_u64().unwrap();
    }
    let a = call(app, Method::GET, "/v1/backup", &[], Bytes::new()).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_documented(&document(), "get", "/v1/backup", &a);
    let (info, pairs) = strata_proto::backup::read(&a.body).unwrap();
    assert!(info.index >= last, "{} < {last}", info.index);
    let pairs: Vec<(&[u8], &[u8])> = pairs
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (&b"a"[..], &b"1"[..]),
            (&b"b"[..], &b"2"[..]),
            (&b"c"[..], &b""[..])
        ]
    );
}
