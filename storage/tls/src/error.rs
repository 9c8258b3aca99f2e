//! What can go wrong making, reading or serving certificates.

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} already exists; certificates and keys are never overwritten (move it away first)"
    )]
    Exists { path: String },
    #[error("{path} is not a PEM certificate: {reason}")]
    Certificate { path: String, reason: String },
    #[error("{path} is not a PEM private key: {reason}")]
    PrivateKey { path: String, reason: String },
    #[error("making the certificate: {0}")]
    Generate(String),
    #[error("{0:?} is not a valid subject alternative name (a DNS name or an IP address)")]
    San(String),
    #[error("a certificate needs at least one subject alternative name (--san)")]
    NoSans,
    #[error("a certificate name must be letters, digits, '-', '_' or '.': {0:?}")]
    Name(String),
    #[error("the TLS settings: {0}")]
    Config(String),
}

impl From<rcgen::Error> for TlsError {
    fn from(e: rcgen::Error) -> Self {
        TlsError::Generate(e.to_string())
    }
}
