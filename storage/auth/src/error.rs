//! What can go wrong with keys and tokens.

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a JWKS file of Ed25519 keys: {reason}")]
    Jwks { path: String, reason: String },
    #[error("{path} is not an Ed25519 private key in PKCS#8 PEM: {reason}")]
    SigningKey { path: String, reason: String },
    #[error("signing the token: {0}")]
    Sign(String),
}

/// Why a token was refused; the message says it to the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token has expired")]
    Expired,
    #[error("the token is not signed by a key this cluster trusts")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token is not a Strata token: {0}")]
    Malformed(String),
}
