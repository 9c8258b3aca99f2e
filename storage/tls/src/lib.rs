//! Transport security for a Strata cluster: the cluster's own certificate
//! authority, the certificates it issues to nodes and the gateway, and the
//! rustls settings the nodes serve and connect with.
//!
//! `strata tls init` makes the CA (`ca.pem`, and `ca-key.pem` readable by
//! its owner alone); `strata tls cert` issues a leaf certificate, good for
//! both ends of a connection (server and client authentication), with the
//! names and addresses it is reached by.

#![forbid(unsafe_code)]

mod error;
mod files;
mod issue;
mod node;
mod pem;
mod reload;

pub use error::TlsError;
pub use issue::{CA_CERT_FILE, CA_KEY_FILE, CaFiles, LeafFiles, init_ca, issue_leaf};
pub use node::{NodeTls, roots};
pub use pem::{read_certs, read_key};
pub use reload::{ReloadingCert, provider};
pub use rustls;
