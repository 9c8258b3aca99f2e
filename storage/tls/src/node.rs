//! The TLS settings of a node: it serves its one port with TLS and asks
//! every caller for a certificate issued by the cluster's CA, and it
//! connects to its peers with its own certificate, trusting only that CA.
//! Its certificate is read again when its files change ([`ReloadingCert`]).

use std::path::Path;
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::TlsError;
use crate::pem::read_certs;
use crate::reload::{ReloadingCert, provider};

/// ALPN a node offers: gRPC and REST over HTTP/2, REST over HTTP/1.1.
const SERVER_ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A node's TLS: what it serves with and what it connects with.
#[derive(Debug, Clone)]
pub struct NodeTls {
    pub server: Arc<ServerConfig>,
    pub client: Arc<ClientConfig>,
}

/// The CA certificates in `ca` as trust roots.
pub fn roots(ca: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(ca)? {
        roots.add(cert).map_err(|e| TlsError::Certificate {
            path: ca.display().to_string(),
            reason: e.to_string(),
        })?;
    }
    Ok(Arc::new(roots))
}

impl NodeTls {
    /// Reads the node's certificate `cert` and key `key` and the cluster's
    /// CA `ca`.
    pub fn load(cert: &Path, key: &Path, ca: &Path) -> Result<NodeTls, TlsError> {
        let provider = provider();
        let identity = Arc::new(ReloadingCert::load(cert, key, provider.clone())?);
        let roots = roots(ca)?;
        let config = |e: rustls::Error| TlsError::Config(e.to_string());
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(config)?
            .with_client_cert_verifier(verifier)
            .with_cert_resolver(identity.clone());
        server.alpn_protocols = SERVER_ALPN.iter().map(|p| p.to_vec()).collect();
        let mut client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(config)?
            .with_root_certificates(roots)
            .with_client_cert_resolver(identity);
        client.alpn_protocols = vec![b"h2".to_vec()];
        Ok(NodeTls {
            server: Arc::new(server),
            client: Arc::new(client),
        })
    }
}
