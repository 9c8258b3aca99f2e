//! A certificate and key read from files, read again when the files
//! change: a node's certificate is rotated by replacing its files, and the
//! next connection, accepted or made, uses the new one without a restart.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use rustls::client::ResolvesClientCert;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{SignatureScheme, crypto};
use std::sync::Mutex;

use crate::TlsError;
use crate::pem::{read_certs, read_key};

/// What identifies a version of the two files: a replaced file (written
/// anew or renamed over) changes its modification time, inode or length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    inode: u64,
    len: u64,
}

fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        inode: meta.ino(),
        len: meta.len(),
    })
}

/// The certificate in use and the files it was read from.
pub struct ReloadingCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Mutex<(Option<Stamp>, Option<Stamp>, Arc<CertifiedKey>)>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert", &self.cert_path)
            .field("key", &self.key_path)
            .finish()
    }
}

impl ReloadingCert {
    /// Reads the pair; an unreadable or mismatched pair is an error here,
    /// at start.
    pub fn load(cert: &Path, key: &Path, provider: Arc<CryptoProvider>) -> Result<Self, TlsError> {
        let stamps = (stamp(cert), stamp(key));
        let certified = read_pair(cert, key, &provider)?;
        Ok(ReloadingCert {
            cert_path: cert.to_path_buf(),
            key_path: key.to_path_buf(),
            provider,
            current: Mutex::new((stamps.0, stamps.1, certified)),
        })
    }

    /// The certificate to use now: read again if either file changed since
    /// it was last read. A pair that does not read whole (a rotation half
    /// done: a new certificate beside the old key) leaves the one in use,
    /// and is tried again on the next call.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let stamps = (stamp(&self.cert_path), stamp(&self.key_path));
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if (current.0, current.1) != stamps
            && let Ok(certified) = read_pair(&self.cert_path, &self.key_path, &self.provider)
        {
            *current = (stamps.0, stamps.1, certified);
        }
        current.2.clone()
    }
}

fn read_pair(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = read_certs(cert)?;
    let key_der = read_key(key)?;
    let certified =
        CertifiedKey::from_der(chain, key_der, provider).map_err(|e| TlsError::PrivateKey {
            path: key.display().to_string(),
            reason: format!("does not go with {}: {e}", cert.display()),
        })?;
    Ok(Arc::new(certified))
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

impl ResolvesClientCert for ReloadingCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        let certified = self.current();
        // Offer it only if the server can check its signature.
        certified.key.choose_scheme(sigschemes)?;
        Some(certified)
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// The crypto the cluster's TLS uses (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(crypto::ring::default_provider())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issue::{init_ca, issue_leaf};

    #[test]
    fn a_replaced_pair_is_read_again_and_a_half_replaced_one_is_not() {
        // Proves: after both files are renamed over, the next call returns
        // the new certificate; while only the key is new (it does not go
        // with the old certificate) the old pair stays in use.
        let dir = tempfile::tempdir().unwrap();
        init_ca(dir.path()).unwrap();
        let sans = vec!["127.0.0.1".to_string()];
        let old = issue_leaf(dir.path(), "n", &sans, &dir.path().join("old")).unwrap();
        let new = issue_leaf(dir.path(), "n", &sans, &dir.path().join("new")).unwrap();
        let cert = ReloadingCert::load(&old.cert, &old.key, provider()).unwrap();
        let first = cert.current().cert[0].clone();
        assert_eq!(first, read_certs(&old.cert).unwrap()[0]);
        std::fs::rename(&new.key, &old.key).unwrap();
        assert_eq!(cert.current().cert[0], first, "half replaced");
        std::fs::rename(&new.cert, &old.cert).unwrap();
        assert_eq!(cert.current().cert[0], read_certs(&old.cert).unwrap()[0]);
        assert_ne!(cert.current().cert[0], first);
    }
}
