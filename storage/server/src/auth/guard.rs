//! The check every request passes before it is served: the caller's role,
//! from the token in its `authorization: Bearer …` header (REST) or
//! metadata (gRPC), or the anonymous role when it carries none, against
//! the role its route needs. A refusal is 401 UNAUTHENTICATED (no
//! credential where one is needed, or one refused) or 403
//! PERMISSION_DENIED (a role too small), in the request's own protocol.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Version, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use strata_auth::{AuthError, Role, Verifier};

use super::access::{Access, needed};
use crate::error::{ApiError, ErrorCode};

/// What a request without a credential may do: nothing, read, or read
/// and write. Never admin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AnonymousRole(pub Option<Role>);

impl FromStr for AnonymousRole {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(AnonymousRole(None)),
            "read" => Ok(AnonymousRole(Some(Role::Read))),
            "write" => Ok(AnonymousRole(Some(Role::Write))),
            "admin" => Err("anonymous requests are never admin: none, read or write".into()),
            other => Err(format!("unknown role {other:?}: none, read or write")),
        }
    }
}

impl fmt::Display for AnonymousRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(role) => role.fmt(f),
        }
    }
}

/// The node's check: the keys whose tokens it takes (none: every caller is
/// anonymous) and the anonymous role.
#[derive(Debug)]
pub struct Guard {
    verifier: Option<Verifier>,
    anonymous: AnonymousRole,
}

impl Guard {
    pub fn new(verifier: Option<Verifier>, anonymous: AnonymousRole) -> Self {
        Guard {
            verifier,
            anonymous,
        }
    }

    /// The guard of a node: the keys in the JWKS file `jwks` (none without
    /// it) and `anonymous`; logs what requests without a token may do.
    pub fn load(jwks: Option<&Path>, anonymous: AnonymousRole) -> Result<Self, AuthError> {
        let verifier = jwks.map(Verifier::from_file).transpose()?;
        tracing::info!(
            anonymous_role = %anonymous,
            keys = %jwks.map_or("none".to_string(), |p| p.display().to_string()),
            "requests without a token may do: {}",
            match anonymous.0 {
                None => "nothing",
                Some(Role::Read) => "reads",
                Some(_) => "reads and writes of keys and leases",
            }
        );
        Ok(Guard::new(verifier, anonymous))
    }

    pub fn anonymous(&self) -> AnonymousRole {
        self.anonymous
    }

    /// Whether the caller whose headers are `headers` may do what needs
    /// `role`.
    pub fn check(&self, role: Role, headers: &HeaderMap) -> Result<(), ApiError> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return match self.anonymous.0 {
                Some(anonymous) if anonymous.allows(role) => Ok(()),
                Some(anonymous) => Err(unauthenticated(format!(
                    "this needs the {role} role: send a token (header `authorization: Bearer \
                     <token>`); requests without one may only {}",
                    if anonymous == Role::Read {
                        "read"
                    } else {
                        "read and write keys"
                    }
                ))),
                None => Err(unauthenticated(format!(
                    "this needs a token with the {role} role (header `authorization: Bearer \
                     <token>`); requests without one may do nothing here"
                ))),
            };
        };
        let token = bearer(value).ok_or_else(|| {
            unauthenticated("the authorization header is not `Bearer <token>`".into())
        })?;
        let verifier = self.verifier.as_ref().ok_or_else(|| {
            unauthenticated(
                "the token was refused: this node trusts no key (no --auth-jwks)".into(),
            )
        })?;
        let claims = verifier
            .verify(token)
            .map_err(|e| unauthenticated(format!("the token was refused: {e}")))?;
        if claims.role.allows(role) {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::PermissionDenied,
                format!(
                    "this needs the {role} role; the token of {:?} has {}",
                    claims.sub, claims.role
                ),
            ))
        }
    }
}

fn unauthenticated(message: String) -> ApiError {
    ApiError::new(ErrorCode::Unauthenticated, message)
}

/// The token of a `Bearer <token>` header value.
fn bearer(value: &HeaderValue) -> Option<&str> {
    let text = value.to_str().ok()?;
    let (scheme, token) = text.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// Middleware: serves a request its caller may make, with the caller's
/// credential in scope for forwarding (`super::credential`); refuses any
/// other in its own protocol.
pub async fn guard(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let role = match needed(req.method(), req.uri().path()) {
        Access::Open | Access::Internal => return next.run(req).await,
        Access::Needs(role) => role,
    };
    match guard.check(role, req.headers()) {
        Ok(()) => {
            let credential = req.headers().get(header::AUTHORIZATION).cloned();
            super::credential::scope(credential, next.run(req)).await
        }
        Err(refusal) => {
            let answer = if is_grpc(req.headers()) {
                tonic::Status::from(refusal)
                    .into_http::<axum::body::Body>()
                    .into_response()
            } else {
                let unauthenticated = refusal.code == ErrorCode::Unauthenticated;
                let mut answer = refusal.into_response();
                if unauthenticated {
                    answer.headers_mut().insert(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_static("Bearer realm=\"strata\""),
                    );
                }
                answer
            };
            // An HTTP/1 client still sending its body would see a broken
            // connection instead of the refusal (`admission`).
            if req.version() < Version::HTTP_2 {
                crate::admission::drain(req.into_body()).await;
            }
            answer
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use strata_auth::KeyPair;

    use super::*;

    fn headers(value: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = value {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn a_caller_is_let_through_only_as_far_as_its_role_goes() {
        // Proves: the anonymous role decides for a request without a
        // credential (none: nothing; write: not admin), a token's role for
        // one with it; a token from another key, a malformed header and a
        // token on a node that trusts no key are refused; refusals are 401
        // without a valid credential, 403 with one too small.
        let pair = KeyPair::generate();
        let verifier = || Some(Verifier::from_jwks(&pair.jwks_json(), "test").unwrap());
        let token = |role| {
            format!(
                "Bearer {}",
                pair.signer()
                    .sign("t", role, Duration::from_secs(60))
                    .unwrap()
            )
        };
        let closed = Guard::new(verifier(), AnonymousRole(None));
        let demo = Guard::new(verifier(), "write".parse().unwrap());
        let code = |r: Result<(), ApiError>| r.err().map(|e| e.code);
        assert_eq!(
            code(closed.check(Role::Read, &headers(None))),
            Some(ErrorCode::Unauthenticated)
        );
        assert_eq!(code(demo.check(Role::Write, &headers(None))), None);
        assert_eq!(
            code(demo.check(Role::Admin, &headers(None))),
            Some(ErrorCode::Unauthenticated)
        );
        let writer = headers(Some(&token(Role::Write)));
        assert_eq!(code(closed.check(Role::Write, &writer)), None);
        assert_eq!(
            code(closed.check(Role::Admin, &writer)),
            Some(ErrorCode::PermissionDenied)
        );
        let admin = headers(Some(&token(Role::Admin)));
        assert_eq!(code(closed.check(Role::Admin, &admin)), None);
        let stranger = KeyPair::generate()
            .signer()
            .sign("m", Role::Admin, Duration::from_secs(60))
            .unwrap();
        let theirs = headers(Some(&format!("Bearer {stranger}")));
        assert_eq!(
            code(demo.check(Role::Read, &theirs)),
            Some(ErrorCode::Unauthenticated)
        );
        let basic = headers(Some("Basic dXNlcjpwYXNz"));
        assert_eq!(
            code(demo.check(Role::Read, &basic)),
            Some(ErrorCode::Unauthenticated)
        );
        let keyless = Guard::new(None, "write".parse().unwrap());
        assert_eq!(
            code(keyless.check(Role::Read, &admin)),
            Some(ErrorCode::Unauthenticated)
        );
        assert!("admin".parse::<AnonymousRole>().is_err());
    }
}
