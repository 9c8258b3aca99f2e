//! Reading PEM certificates and keys for rustls.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsError;

/// Every certificate in the PEM file `path` (a chain: the leaf first); at
/// least one.
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |reason: String| TlsError::Certificate {
        path: path.display().to_string(),
        reason,
    };
    let pem = crate::files::read(path)?;
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no CERTIFICATE block".into()));
    }
    Ok(certs)
}

/// The private key in the PEM file `path` (PKCS#8, SEC1 or PKCS#1).
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = crate::files::read(path)?;
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::PrivateKey {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}
