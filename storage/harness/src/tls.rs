//! The certificates of a local cluster run with TLS: the cluster's CA in
//! `<dir>/ca` and a certificate per process in `<dir>/certs`, made with
//! `strata-tls` on the first start and kept across restarts.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The name of the gateway's certificate.
pub const GATEWAY: &str = "gateway";
/// The names every local certificate is valid for: the processes all run
/// on this host.
const LOCAL_SANS: [&str; 2] = ["127.0.0.1", "localhost"];

/// A certificate and its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A node's certificate, key and the CA it trusts (`--tls-cert`,
/// `--tls-key`, `--tls-ca`); the gateway's for its connections to the
/// nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutualFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
}

/// `name`'s files for mutual TLS, kept in `dir`.
pub fn mutual_files(dir: &Path, name: &str) -> MutualFiles {
    let CertFiles { cert, key } = cert_files(dir, name);
    MutualFiles {
        cert,
        key,
        ca: ca_file(dir),
    }
}

/// The cluster's CA certificate (`ca.pem`) in `dir`.
pub fn ca_file(dir: &Path) -> PathBuf {
    dir.join("ca").join(strata_tls::CA_CERT_FILE)
}

/// Where `name`'s certificate and key are kept in `dir`.
pub fn cert_files(dir: &Path, name: &str) -> CertFiles {
    let certs = dir.join("certs");
    CertFiles {
        cert: certs.join(format!("{name}.pem")),
        key: certs.join(format!("{name}-key.pem")),
    }
}

/// Makes, in `dir`, the CA unless it is there and a certificate for each
/// of `names` that has none yet.
pub fn open_or_create(dir: &Path, names: &[String]) -> Result<()> {
    let ca_dir = dir.join("ca");
    if !ca_file(dir).exists() {
        strata_tls::init_ca(&ca_dir)
            .with_context(|| format!("making the cluster's CA in {}", ca_dir.display()))?;
    }
    let sans: Vec<String> = LOCAL_SANS.iter().map(|s| s.to_string()).collect();
    for name in names {
        if !cert_files(dir, name).cert.exists() {
            strata_tls::issue_leaf(&ca_dir, name, &sans, &dir.join("certs"))
                .with_context(|| format!("issuing {name}'s certificate"))?;
        }
    }
    Ok(())
}

/// An HTTP client that trusts the CA in `dir` (its certificate must
/// exist), with `timeout` per request.
pub fn http_client(dir: Option<&Path>, timeout: std::time::Duration) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder().timeout(timeout);
    if let Some(dir) = dir {
        let pem = std::fs::read(ca_file(dir))
            .with_context(|| format!("reading {}", ca_file(dir).display()))?;
        builder = builder
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&pem)?);
    }
    Ok(builder.build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_are_made_once_and_kept() {
        // Proves: a second start finds the CA and certificates of the first
        // and makes only the ones missing.
        let dir = tempfile::tempdir().unwrap();
        open_or_create(dir.path(), &[GATEWAY.to_string()]).unwrap();
        let ca = std::fs::read(ca_file(dir.path())).unwrap();
        let gw = std::fs::read(cert_files(dir.path(), GATEWAY).cert).unwrap();
        open_or_create(dir.path(), &[GATEWAY.to_string(), "node1".into()]).unwrap();
        assert_eq!(std::fs::read(ca_file(dir.path())).unwrap(), ca);
        assert_eq!(
            std::fs::read(cert_files(dir.path(), GATEWAY).cert).unwrap(),
            gw
        );
        assert!(cert_files(dir.path(), "node1").key.exists());
    }
}
