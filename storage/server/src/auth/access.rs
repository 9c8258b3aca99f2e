//! The role each route needs.
//!
//! Reads of keys, leases and the cluster's state need `read`; writes of
//! keys and leases `write`; changes to the cluster (membership,
//! leadership, compaction, snapshots) and backups `admin`. Health, metrics,
//! the API document and the console's files are open. The raft transport,
//! the routes members call on each other (`Cluster/Local*`) and the
//! gateway's endpoint discovery (`crate::eds`) are internal: the gateway
//! never routes them, and on the node they are not checked (members hold
//! no caller's credential when they call them, nor does Envoy's discovery
//! client; the transport between nodes is protected by the network, and by
//! mutual TLS where it is set up).

use axum::http::Method;
use strata_auth::Role;

/// What a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Open,
    /// Members, from one another; never routed by the gateway.
    Internal,
    /// A caller with at least this role.
    Needs(Role),
}

/// The gRPC methods, by full path, and what each needs.
const GRPC: &[(&str, Access)] = &[
    ("/strata.v1.KV/Get", Access::Needs(Role::Read)),
    ("/strata.v1.KV/Scan", Access::Needs(Role::Read)),
    ("/strata.v1.KV/Watch", Access::Needs(Role::Read)),
    ("/strata.v1.KV/Put", Access::Needs(Role::Write)),
    ("/strata.v1.KV/Delete", Access::Needs(Role::Write)),
    ("/strata.v1.KV/Batch", Access::Needs(Role::Write)),
    ("/strata.v1.KV/CompareAndSwap", Access::Needs(Role::Write)),
    ("/strata.v1.KV/Txn", Access::Needs(Role::Write)),
    ("/strata.v1.KV/Backup", Access::Needs(Role::Admin)),
    ("/strata.v1.Lease/Grant", Access::Needs(Role::Write)),
    ("/strata.v1.Lease/Revoke", Access::Needs(Role::Write)),
    ("/strata.v1.Lease/KeepAliveOnce", Access::Needs(Role::Write)),
    ("/strata.v1.Lease/KeepAlive", Access::Needs(Role::Write)),
    ("/strata.v1.Lease/TimeToLive", Access::Needs(Role::Read)),
    ("/strata.v1.Lease/List", Access::Needs(Role::Read)),
    ("/strata.v1.Cluster/Status", Access::Needs(Role::Read)),
    ("/strata.v1.Cluster/Members", Access::Needs(Role::Read)),
    (
        "/strata.v1.Cluster/TransferLeader",
        Access::Needs(Role::Admin),
    ),
    ("/strata.v1.Cluster/AddMember", Access::Needs(Role::Admin)),
    (
        "/strata.v1.Cluster/PromoteMember",
        Access::Needs(Role::Admin),
    ),
    (
        "/strata.v1.Cluster/RemoveMember",
        Access::Needs(Role::Admin),
    ),
    ("/strata.v1.Cluster/SplitRange", Access::Needs(Role::Admin)),
    ("/strata.v1.Cluster/Compact", Access::Needs(Role::Admin)),
    ("/strata.v1.Cluster/Snapshot", Access::Needs(Role::Admin)),
    ("/strata.v1.Cluster/LocalStatus", Access::Internal),
    ("/strata.v1.Cluster/LocalStats", Access::Internal),
    ("/strata.v1.Cluster/LocalCompact", Access::Internal),
    ("/strata.v1.Cluster/LocalSnapshot", Access::Internal),
    ("/strata.v1.Cluster/LocalTransferLeader", Access::Internal),
];

/// What `method path` needs.
pub fn needed(method: &Method, path: &str) -> Access {
    if let Some(&(_, access)) = GRPC.iter().find(|(p, _)| *p == path) {
        return access;
    }
    if path.starts_with("/strata.v1.Raft/") || path.starts_with(crate::eds::PATH) {
        return Access::Internal;
    }
    // Any other method of the public services (an unknown one is answered
    // UNIMPLEMENTED) needs what the least of them does.
    if path.starts_with("/strata.v1.") {
        return Access::Needs(Role::Read);
    }
    let read = method == Method::GET || method == Method::HEAD;
    let keys = path == "/v1/kv" || path.starts_with("/v1/kv/");
    let leases = path == "/v1/leases" || path.starts_with("/v1/leases/");
    if keys || leases {
        return Access::Needs(if read { Role::Read } else { Role::Write });
    }
    match path {
        "/v1/batch" | "/v1/cas" | "/v1/txn" => Access::Needs(Role::Write),
        "/v1/backup" => Access::Needs(Role::Admin),
        _ if path.starts_with("/v1/cluster/") => {
            Access::Needs(if read { Role::Read } else { Role::Admin })
        }
        // The watch, the canary's report, and any route under /v1 not
        // named above (answered 404).
        _ if path.starts_with("/v1/") || path == "/v1" => Access::Needs(Role::Read),
        // Health, metrics, the API document, the console's files, gRPC
        // health and reflection, and anything else (answered 404).
        _ => Access::Open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gateway's copy of this table, relative to this crate: the
    /// gateway refuses at the edge what a token's role does not allow
    /// (gateway/roles.py), from this file.
    const GATEWAY_TABLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../gateway/roles.json");
    /// How to rewrite it, from `storage/`.
    const REGENERATE_GATEWAY_TABLE: &str = "cargo test -p strata-server --lib auth::access::tests::regenerate_gateway_table -- --ignored";

    fn role_name(access: Access) -> &'static str {
        match access {
            Access::Open => "open",
            Access::Internal => "internal",
            Access::Needs(role) => role.as_str(),
        }
    }

    /// What every route of the API document and every gRPC method needs,
    /// as JSON: REST operations by method and path template (`{key}` spans
    /// segments, any other parameter one), gRPC methods by full path.
    fn gateway_table() -> String {
        let doc: serde_json::Value =
            serde_json::from_str(&crate::rest::openapi::render()).expect("the API document");
        let mut rest = Vec::new();
        for (template, operations) in doc["paths"].as_object().expect("paths") {
            for method in operations.as_object().expect("operations").keys() {
                let method = method.to_ascii_uppercase();
                // A concrete path of the template, for `needed`.
                let path = template.replace("{key}", "a/b").replace("{id}", "7");
                assert!(
                    !path.contains('{'),
                    "a parameter without a sample: {template}"
                );
                let parsed = Method::from_bytes(method.as_bytes()).expect("an HTTP method");
                let access = needed(&parsed, &path);
                rest.push(serde_json::json!({
                    "method": method, "path": template, "role": role_name(access),
                }));
            }
        }
        let grpc: Vec<_> = GRPC
            .iter()
            .map(|(path, access)| serde_json::json!({"path": path, "role": role_name(*access)}))
            .collect();
        let table = serde_json::json!({
            "about": "What each route needs, from the node's table (storage/server/src/auth/access.rs). \
                      Generated: do not edit by hand. Regenerate (from storage/): ".to_string()
                + REGENERATE_GATEWAY_TABLE,
            "rest": rest,
            "grpc": grpc,
        });
        serde_json::to_string_pretty(&table).expect("JSON") + "\n"
    }

    #[test]
    fn the_gateways_role_table_is_the_nodes() {
        // Proves: the roles the gateway checks at the edge (gateway/roles.json,
        // read by gateway/roles.py) are the ones each node checks, for every
        // route of the API document and every gRPC method, so the two
        // cannot drift apart.
        let checked_in = std::fs::read_to_string(GATEWAY_TABLE).expect("gateway/roles.json");
        assert!(
            checked_in == gateway_table(),
            "gateway/roles.json differs from the node's table; regenerate it (from storage/): \
             {REGENERATE_GATEWAY_TABLE}"
        );
    }

    #[test]
    #[ignore = "rewrites gateway/roles.json"]
    fn regenerate_gateway_table() {
        std::fs::write(GATEWAY_TABLE, gateway_table()).expect("writing gateway/roles.json");
    }

    #[test]
    fn each_route_needs_the_role_its_effect_calls_for() {
        let cases = [
            (Method::GET, "/v1/kv/a/b", Access::Needs(Role::Read)),
            (Method::GET, "/v1/kv", Access::Needs(Role::Read)),
            (Method::PUT, "/v1/kv/a", Access::Needs(Role::Write)),
            (Method::DELETE, "/v1/kv/a", Access::Needs(Role::Write)),
            (Method::POST, "/v1/txn", Access::Needs(Role::Write)),
            (Method::POST, "/v1/batch", Access::Needs(Role::Write)),
            (Method::POST, "/v1/cas", Access::Needs(Role::Write)),
            (Method::GET, "/v1/leases", Access::Needs(Role::Read)),
            (Method::POST, "/v1/leases", Access::Needs(Role::Write)),
            (Method::DELETE, "/v1/leases/7", Access::Needs(Role::Write)),
            (
                Method::POST,
                "/v1/leases/7/keepalive",
                Access::Needs(Role::Write),
            ),
            (Method::GET, "/v1/watch", Access::Needs(Role::Read)),
            (Method::GET, "/v1/backup", Access::Needs(Role::Admin)),
            (Method::GET, "/v1/cluster/status", Access::Needs(Role::Read)),
            (Method::GET, "/v1/cluster/events", Access::Needs(Role::Read)),
            (
                Method::GET,
                "/v1/cluster/members",
                Access::Needs(Role::Read),
            ),
            (
                Method::POST,
                "/v1/cluster/members",
                Access::Needs(Role::Admin),
            ),
            (
                Method::DELETE,
                "/v1/cluster/members/1",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/v1/cluster/members/4/promote",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/v1/cluster/leader",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/v1/cluster/ranges/split",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/v1/cluster/compact",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/v1/cluster/snapshot",
                Access::Needs(Role::Admin),
            ),
            (Method::GET, "/v1/nothing-here", Access::Needs(Role::Read)),
            (Method::GET, "/health/ready", Access::Open),
            (Method::GET, "/metrics", Access::Open),
            (Method::GET, "/", Access::Open),
            (Method::GET, "/assets/index.js", Access::Open),
            (Method::POST, "/strata.v1.KV/Get", Access::Needs(Role::Read)),
            (
                Method::POST,
                "/strata.v1.KV/Put",
                Access::Needs(Role::Write),
            ),
            (
                Method::POST,
                "/strata.v1.KV/Backup",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/strata.v1.Cluster/RemoveMember",
                Access::Needs(Role::Admin),
            ),
            (
                Method::POST,
                "/strata.v1.Cluster/NoSuchMethod",
                Access::Needs(Role::Read),
            ),
            (Method::POST, "/strata.v1.Raft/Stream", Access::Internal),
            (
                Method::POST,
                "/strata.v1.Cluster/LocalStatus",
                Access::Internal,
            ),
            (Method::POST, "/grpc.health.v1.Health/Check", Access::Open),
            (
                Method::POST,
                "/envoy.service.endpoint.v3.EndpointDiscoveryService/StreamEndpoints",
                Access::Internal,
            ),
            (
                Method::POST,
                "/envoy.service.endpoint.v3.EndpointDiscoveryService/FetchEndpoints",
                Access::Internal,
            ),
        ];
        for (method, path, want) in cases {
            assert_eq!(needed(&method, path), want, "{method} {path}");
        }
    }
}
