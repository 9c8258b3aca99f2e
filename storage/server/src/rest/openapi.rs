//! The OpenAPI document of the REST API, derived from the code: each route's
//! `#[utoipa::path]` attribute (registered through [`routes`](super::routes),
//! the same list the router serves), the request and answer types' schemas,
//! and the shared parts below. The node serves it at `/openapi.json`;
//! `proto/openapi.json` is its rendering, checked in for the console and
//! other tools, and a test fails when the two differ.
//!
//! To rewrite `proto/openapi.json` after changing the API (from
//! `storage/`):
//! `cargo test -p strata-server --lib rest::openapi::tests::regenerate -- --ignored`.

use std::sync::LazyLock;

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use utoipa::openapi::path::{Operation, Parameter, ParameterIn, PathItem};
use utoipa::openapi::schema::{AdditionalProperties, AllOf, Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi as Document, RefOr};
use utoipa::{OpenApi, PartialSchema, ToSchema};

use super::model::cluster::RaftEvent;
use super::model::kv::ResponseHeader;
use super::model::kv_request::ConsistencyParam;
use super::model::range_event::RangeEvent;
use super::model::watch::{WatchChanges, WatchProgress};
use super::responses;
use crate::auth::Access;
use crate::error::{ErrorBody, ErrorCode};

/// What the document says about itself and its shared components; the
/// routes add their paths and the schemas they use.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Strata REST API",
        version = "1.0.0",
        description = "Strongly consistent distributed key-value store. REST mirror of the gRPC services strata.v1.KV and strata.v1.Cluster (proto/strata/v1). Human-readable contract: docs/api-rest.md.\n\nEvery non-2xx response from a node has an Error body. A 503 UNAVAILABLE always means \"not applied, safe to retry\" (headers `retry-after-ms` and `x-strata-retryable: true`); a 504 OUTCOME_UNKNOWN means the write may or may not have been applied. An unknown route answers 404 NOT_FOUND, a wrong method on a known route 405 METHOD_NOT_ALLOWED with an `Allow` header.\n\nIntegers (ids, terms, indexes) are unsigned 64-bit and written as JSON numbers.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    servers(
        (url = "http://127.0.0.1:8080", description = "Envoy gateway of the local demo"),
        (url = "http://127.0.0.1:7001", description = "Node 1 of the local demo, directly"),
    ),
    tags(
        (name = "kv", description = "Keys and values."),
        (name = "leases", description = "Leases: keys that end when their lease does."),
        (name = "cluster", description = "Cluster status, membership and events."),
        (name = "health", description = "Health checks used by Envoy and orchestrators."),
        (name = "meta", description = "This document."),
    ),
    components(schemas(
        ErrorBody,
        ResponseHeader,
        RaftEvent,
        RangeEvent,
        ConsistencyParam,
        WatchChanges,
        WatchProgress
    )),
)]
struct Api;

/// The JSON Schema dialect of every schema in the document.
const SCHEMA_DIALECT: &str = "https://spec.openapis.org/oas/3.1/dialect/base";

/// The document, assembled from [`Api`] and every route.
pub fn document() -> Document {
    let mut doc = super::routes(Api::openapi()).into_openapi();
    doc.json_schema_dialect = Some(SCHEMA_DIALECT.to_string());
    doc.paths.paths = std::mem::take(&mut doc.paths.paths)
        .into_iter()
        .map(|(path, mut item)| {
            hoist_path_parameters(&mut item);
            (openapi_path(&path), item)
        })
        .collect();
    secure(&mut doc);
    let components = doc.components.get_or_insert_with(Default::default);
    components.responses.extend(responses::all());
    merge_flattened(&mut components.schemas);
    if let Some(RefOr::T(Schema::Object(codes))) = components.schemas.get_mut("ErrorCode") {
        codes.description = Some(error_code_table());
    }
    doc
}

/// Every route that needs a role (`crate::auth::access`) takes a bearer
/// token, or none where the anonymous role allows (`--anonymous-role`), and
/// may answer 401 and 403.
fn secure(doc: &mut Document) {
    use utoipa::openapi::security::{
        HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
    };
    let components = doc.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        BEARER.to_string(),
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("JWT")
                .description(Some(
                    "A token made by `strata auth token` (EdDSA JWT naming a role: read, write or admin).",
                ))
                .build(),
        )
        .into(),
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            (axum::http::Method::GET, &mut item.get),
            (axum::http::Method::PUT, &mut item.put),
            (axum::http::Method::POST, &mut item.post),
            (axum::http::Method::DELETE, &mut item.delete),
            (axum::http::Method::PATCH, &mut item.patch),
            (axum::http::Method::HEAD, &mut item.head),
        ];
        for (method, operation) in operations {
            let Some(operation) = operation.as_mut() else {
                continue;
            };
            if let Access::Needs(_) = crate::auth::needed(&method, path) {
                operation.security = Some(vec![
                    SecurityRequirement::new(BEARER, Vec::<String>::new()),
                    SecurityRequirement::default(),
                ]);
                operation
                    .responses
                    .responses
                    .extend(responses::auth_errors());
            }
        }
    }
}

/// The name of the bearer token scheme in the document.
const BEARER: &str = "bearer";

/// The document as served and as checked in: pretty JSON with a final
/// newline.
pub fn render() -> String {
    let mut json =
        serde_json::to_string_pretty(&document()).expect("an OpenAPI document always serializes");
    json.push('\n');
    json
}

static RENDERED: LazyLock<String> = LazyLock::new(render);

/// This OpenAPI 3.1 document
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    tag = "meta",
    responses(
        (status = 200, description = "The document (also kept in the repository at proto/openapi.json).", body = inline(JsonObject)),
    ),
)]
pub async fn serve() -> Response {
    let mut r = RENDERED.as_str().into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Any JSON object: what `/openapi.json` answers, as far as the document
/// itself says.
struct JsonObject;

impl PartialSchema for JsonObject {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new().schema_type(Type::Object).into()
    }
}

impl ToSchema for JsonObject {}

/// An axum path in OpenAPI's spelling: the catch-all `{*key}` (which lets a
/// key hold `/`) is the parameter `{key}`.
fn openapi_path(axum_path: &str) -> String {
    axum_path.replace("{*", "{")
}

/// Moves the path parameters every operation of `item` declares to the
/// path itself, where they belong: `{key}` is part of `/v1/kv/{key}`
/// whatever the method.
fn hoist_path_parameters(item: &mut PathItem) {
    let operations: Vec<&mut Operation> = [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
    ]
    .into_iter()
    .flatten()
    .collect();
    let Some(first) = operations.first() else {
        return;
    };
    let shared: Vec<RefOr<Parameter>> = first
        .parameters
        .iter()
        .flatten()
        .filter(|p| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Path))
        .filter(|p| {
            operations
                .iter()
                .all(|o| o.parameters.iter().flatten().any(|q| q == *p))
        })
        .cloned()
        .collect();
    if shared.is_empty() {
        return;
    }
    for operation in operations {
        if let Some(parameters) = &mut operation.parameters {
            parameters.retain(|p| !shared.contains(p));
            if parameters.is_empty() {
                operation.parameters = None;
            }
        }
    }
    item.parameters = Some(shared);
}

/// Rewrites every schema utoipa renders as `allOf` of objects (a struct
/// with a `#[serde(flatten)]` field) as the one object serde writes. An
/// `allOf` cannot be closed: `additionalProperties: false` on any part would
/// refuse the other parts' fields.
fn merge_flattened(schemas: &mut std::collections::BTreeMap<String, RefOr<Schema>>) {
    let flattened: Vec<String> = schemas
        .iter()
        .filter(|(_, s)| matches!(s, RefOr::T(Schema::AllOf(_))))
        .map(|(name, _)| name.clone())
        .collect();
    for name in flattened {
        let Some(RefOr::T(Schema::AllOf(all_of))) = schemas.get(&name) else {
            continue;
        };
        if let Some(merged) = merge(all_of, schemas) {
            schemas.insert(name, RefOr::T(Schema::Object(merged)));
        }
    }
}

/// One object with the properties of every part of `all_of`, each part
/// either an object or a reference to one in `schemas`; `None` when a part
/// is neither. utoipa lists the struct's own fields last, after the
/// flattened ones; they come first here, as serde writes them.
fn merge(
    all_of: &AllOf,
    schemas: &std::collections::BTreeMap<String, RefOr<Schema>>,
) -> Option<Object> {
    let mut merged = Object::new();
    merged.description = all_of.description.clone();
    let mut closed = false;
    let (own, flattened) = all_of.items.split_last()?;
    for part in std::iter::once(own).chain(flattened) {
        let part = match part {
            RefOr::T(Schema::Object(o)) => o,
            RefOr::Ref(r) => {
                let name = r.ref_location.rsplit('/').next()?;
                match schemas.get(name)? {
                    RefOr::T(Schema::Object(o)) => o,
                    _ => return None,
                }
            }
            _ => return None,
        };
        if merged.description.is_none() {
            merged.description = part.description.clone();
        }
        merged.schema_type = part.schema_type.clone();
        merged
            .properties
            .extend(part.properties.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged.required.extend(part.required.iter().cloned());
        closed |= matches!(
            part.additional_properties.as_deref(),
            Some(AdditionalProperties::FreeForm(false))
        );
    }
    if closed {
        merged.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
    }
    Some(merged)
}

/// Each error code's HTTP status and gRPC code, from the code that maps them.
fn error_code_table() -> String {
    let schema = serde_json::to_value(ErrorCode::schema()).unwrap_or_default();
    let rows: Vec<String> = schema["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|name| serde_json::from_value::<ErrorCode>(name.clone()).ok())
        .map(|code| {
            format!(
                "{} {} / {}",
                code.as_str(),
                code.http_status().as_u16(),
                grpc_name(code.grpc_code())
            )
        })
        .collect();
    format!(
        "Machine-readable error code. HTTP / gRPC mapping: {}. UNAVAILABLE and OVERLOADED mean not applied, safe to retry (OVERLOADED: the node's budget of writes in flight is spent; retry after a pause); OUTCOME_UNKNOWN that the write may or may not have been applied.",
        rows.join("; ")
    )
}

/// A gRPC code's canonical name (`INVALID_ARGUMENT`), from tonic's variant
/// name (`InvalidArgument`).
fn grpc_name(code: tonic::Code) -> String {
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in rendering, relative to this crate.
    const CHECKED_IN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto/openapi.json");
    /// How to rewrite it, from `storage/`.
    const REGENERATE: &str =
        "cargo test -p strata-server --lib rest::openapi::tests::regenerate -- --ignored";

    #[test]
    fn checked_in_document_is_the_derived_one() {
        // Proves: proto/openapi.json (what the console's types and the
        // schemathesis run are made from) is exactly the document the code
        // derives and the node serves.
        let checked_in = std::fs::read_to_string(CHECKED_IN).expect("proto/openapi.json");
        let derived = render();
        if checked_in != derived {
            let line = checked_in
                .lines()
                .zip(derived.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(checked_in.lines().count().min(derived.lines().count()));
            panic!(
                "proto/openapi.json differs from the document the code derives (first at line {}: \
                 checked in {:?}, derived {:?}). Regenerate it (from storage/): {REGENERATE}",
                line + 1,
                checked_in.lines().nth(line).unwrap_or(""),
                derived.lines().nth(line).unwrap_or(""),
            );
        }
    }

    /// Every `$ref` in `value`, wherever it is.
    fn refs(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("$ref", serde_json::Value::String(r)) => out.push(r.clone()),
                        _ => refs(v, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_reference_names_a_component() {
        // Proves: no `$ref` in the document points at a schema or response
        // that was never registered (utoipa registers what request and
        // answer bodies use, but not what query parameters use).
        let doc: serde_json::Value = serde_json::from_str(&render()).unwrap();
        let mut found = Vec::new();
        refs(&doc, &mut found);
        assert!(found.len() > 20, "{found:?}");
        for r in found {
            let pointer = r.strip_prefix('#').expect("a local reference");
            assert!(doc.pointer(pointer).is_some(), "{r} names nothing");
        }
    }

    #[test]
    fn flattened_answers_are_one_closed_object() {
        // Proves: a KV answer with the response header flattened into it is
        // described as the one object serde writes, its own fields first,
        // closed to anything else.
        let doc = document();
        let schemas = &doc.components.as_ref().unwrap().schemas;
        let Some(RefOr::T(Schema::Object(get))) = schemas.get("GetResult") else {
            panic!(
                "GetResult is not an object: {:?}",
                schemas.get("GetResult").is_some()
            );
        };
        let names: Vec<&str> = get.properties.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "key",
                "value",
                "create_index",
                "mod_index",
                "lease",
                "encoding",
                "node_id",
                "term",
                "index",
                "leader_id",
                "replayed"
            ]
        );
        // `replayed` appears only on a write's replay.
        assert_eq!(get.required.len(), 10);
        assert!(matches!(
            get.additional_properties.as_deref(),
            Some(AdditionalProperties::FreeForm(false))
        ));
        let no_all_of = schemas
            .iter()
            .filter(|(_, s)| matches!(s, RefOr::T(Schema::AllOf(_))))
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>();
        assert!(no_all_of.is_empty(), "{no_all_of:?}");
    }

    #[test]
    fn paths_use_openapi_parameter_syntax() {
        // Proves: axum's catch-all `{*key}` appears as the parameter `{key}`,
        // declared once on the path rather than on each of its methods.
        assert_eq!(openapi_path("/v1/kv/{*key}"), "/v1/kv/{key}");
        let doc = document();
        assert!(doc.paths.paths.keys().all(|p| !p.contains('*')));
        let key = &doc.paths.paths["/v1/kv/{key}"];
        let names = |ps: &Option<Vec<RefOr<Parameter>>>| -> Vec<String> {
            ps.iter()
                .flatten()
                .filter_map(|p| match p {
                    RefOr::T(p) => Some(p.name.clone()),
                    RefOr::Ref(_) => None,
                })
                .collect()
        };
        assert_eq!(names(&key.parameters), ["key"]);
        let get = key.get.as_ref().unwrap();
        assert_eq!(names(&get.parameters), ["consistency", "encoding"]);
        let put = key.put.as_ref().unwrap();
        assert_eq!(
            names(&put.parameters),
            ["ttl", "lease", "x-strata-request-id"]
        );
    }

    #[test]
    #[ignore = "rewrites proto/openapi.json; run it on purpose after changing the API"]
    fn regenerate() {
        std::fs::write(CHECKED_IN, render()).expect("writing proto/openapi.json");
    }
}
