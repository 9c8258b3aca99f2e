//! `GET /v1/backup`: the whole key space as of one read, in the backup
//! format.

use axum::http::{Method, StatusCode};
use bytes::Bytes;

use crate::support::{assert_documented, call, document, one_node};
use strata_server::config::Limits;

#[tokio::test]
async fn a_backup_holds_every_key_as_of_its_index() {
    // Proves: the REST backup is a whole file in the backup format, with
    // every lease (id, TTL) and every key and value in order with its
    // create and mod index and lease, at an index at least that of the
    // last acknowledged write, and documented as the OpenAPI says.
    let n = one_node(Limits::default()).await;
    let app = &n.app;
    let admin = ("authorization", n.admin.as_str());
    let granted = call(
        app,
        Method::POST,
        "/v1/leases",
        &[("content-type", "application/json")],
        r#"{"id": 7, "ttl": "1h"}"#.to_string(),
    )
    .await;
    assert_eq!(granted.status, StatusCode::OK, "{:?}", granted.body);
    let mut indexes = std::collections::BTreeMap::new();
    for (k, v) in [("b", "2"), ("a", "1"), ("c", ""), ("a", "1")] {
        let a = call(app, Method::PUT, &format!("/v1/kv/{k}"), &[], v.to_string()).await;
        let at = a.json()["index"].as_u64().unwrap();
        indexes.entry(k).or_insert((at, at)).1 = at;
    }
    let leased = call(app, Method::PUT, "/v1/kv/d?lease=7", &[], "4".to_string()).await;
    assert_eq!(leased.status, StatusCode::OK, "{:?}", leased.body);
    let last = leased.json()["index"].as_u64().unwrap();
    let a = call(app, Method::GET, "/v1/backup", &[admin], Bytes::new()).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_documented(&document(), "get", "/v1/backup", &a);
    let (info, items) = strata_proto::backup::read(&a.body).unwrap();
    assert!(info.index >= last, "{} < {last}", info.index);
    let pairs: Vec<(&[u8], &[u8])> = strata_proto::backup::pairs(&items)
        .map(|p| (p.key.as_slice(), p.value.as_slice()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            (&b"a"[..], &b"1"[..]),
            (&b"b"[..], &b"2"[..]),
            (&b"c"[..], &b""[..]),
            (&b"d"[..], &b"4"[..])
        ]
    );
    assert_eq!(
        items[0],
        strata_proto::backup::BackupItem::Lease {
            id: 7,
            ttl_ms: 3_600_000
        }
    );
    assert_eq!((info.leases, info.pairs), (1, 4));
    for p in strata_proto::backup::pairs(&items) {
        let key = std::str::from_utf8(&p.key).unwrap();
        let want = match key {
            "d" => (last, last, 7),
            k => {
                let (create, modified) = indexes[k];
                (create, modified, 0)
            }
        };
        assert_eq!((p.create_index, p.mod_index, p.lease), want, "key {key}");
    }
    let (created, modified) = indexes["a"];
    assert!(created < modified, "a was put twice");
}
