//! Making the cluster's CA and issuing leaf certificates with it.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

use crate::TlsError;
use crate::files::{none_exist, read, write_new};

/// The CA certificate's file name in a CA directory (give it to every node
/// as `--tls-ca`, and to clients as `--ca-file`).
pub const CA_CERT_FILE: &str = "ca.pem";
/// The CA private key's file name in a CA directory: whoever holds it can
/// issue certificates the cluster trusts.
pub const CA_KEY_FILE: &str = "ca-key.pem";

/// How long the CA is valid.
const CA_VALID_DAYS: i64 = 10 * 365;
/// How long a leaf certificate is valid.
const LEAF_VALID_DAYS: i64 = 365;
/// Clock skew tolerated between the machine that issues and those that check.
const BACKDATE: Duration = Duration::hours(1);

/// Where a CA was written.
#[derive(Debug, Clone)]
pub struct CaFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Where a leaf certificate was written.
#[derive(Debug, Clone)]
pub struct LeafFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Makes a new CA in `dir` (made if missing): `ca.pem` and `ca-key.pem`
/// (mode 0600). Refuses if either file is there already: replacing a CA
/// would leave every certificate it issued untrusted.
pub fn init_ca(dir: &Path) -> Result<CaFiles, TlsError> {
    std::fs::create_dir_all(dir).map_err(crate::files::io(dir))?;
    let files = CaFiles {
        cert: dir.join(CA_CERT_FILE),
        key: dir.join(CA_KEY_FILE),
    };
    none_exist(&[&files.cert, &files.key])?;
    let key = KeyPair::generate()?;
    let cert = ca_params(OffsetDateTime::now_utc()).self_signed(&key)?;
    write_new(&files.key, &key.serialize_pem(), 0o600)?;
    write_new(&files.cert, &cert.pem(), 0o644)?;
    Ok(files)
}

fn ca_params(now: OffsetDateTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    // A name of its own: a client that trusts another cluster's CA then
    // finds no issuer of this one's certificates by name ("unknown
    // issuer"), rather than a CA of the same name whose signature fails.
    params.distinguished_name.push(
        DnType::CommonName,
        format!("Strata cluster CA {:x}", now.unix_timestamp_nanos()),
    );
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = now - BACKDATE;
    params.not_after = now + Duration::days(CA_VALID_DAYS);
    params
}

/// Issues a certificate for `name` with the CA in `ca_dir`, valid for the
/// subject alternative names `sans` (DNS names or IP addresses) and for
/// both server and client authentication, into `out` (made if missing):
/// `NAME.pem` and `NAME-key.pem` (mode 0600). Refuses if either file is
/// there already.
pub fn issue_leaf(
    ca_dir: &Path,
    name: &str,
    sans: &[String],
    out: &Path,
) -> Result<LeafFiles, TlsError> {
    check_name(name)?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    for san in sans {
        // rcgen takes any IA5 string as a DNS name; a client checks the
        // name it dials against these, so each must be one it can dial.
        rustls::pki_types::ServerName::try_from(san.as_str())
            .map_err(|_| TlsError::San(san.clone()))?;
        let one =
            CertificateParams::new(vec![san.clone()]).map_err(|_| TlsError::San(san.clone()))?;
        params.subject_alt_names.extend(one.subject_alt_names);
    }
    if params.subject_alt_names.is_empty() {
        return Err(TlsError::NoSans);
    }
    let ca_cert_path = ca_dir.join(CA_CERT_FILE);
    let ca_key_path = ca_dir.join(CA_KEY_FILE);
    let ca_key = KeyPair::from_pem(&read(&ca_key_path)?).map_err(|e| TlsError::PrivateKey {
        path: ca_key_path.display().to_string(),
        reason: e.to_string(),
    })?;
    let issuer = Issuer::from_ca_cert_pem(&read(&ca_cert_path)?, ca_key).map_err(|e| {
        TlsError::Certificate {
            path: ca_cert_path.display().to_string(),
            reason: e.to_string(),
        }
    })?;
    std::fs::create_dir_all(out).map_err(crate::files::io(out))?;
    let files = LeafFiles {
        cert: out.join(format!("{name}.pem")),
        key: out.join(format!("{name}-key.pem")),
    };
    none_exist(&[&files.cert, &files.key])?;
    let now = OffsetDateTime::now_utc();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.use_authority_key_identifier_extension = true;
    params.not_before = now - BACKDATE;
    params.not_after = now + Duration::days(LEAF_VALID_DAYS);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    write_new(&files.key, &key.serialize_pem(), 0o600)?;
    write_new(&files.cert, &cert.pem(), 0o644)?;
    Ok(files)
}

/// A name becomes file names: nothing that could leave `out`.
fn check_name(name: &str) -> Result<(), TlsError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(TlsError::Name(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;

    use rustls::RootCertStore;
    use rustls::client::WebPkiServerVerifier;
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::{ServerName, UnixTime};
    use rustls::server::WebPkiClientVerifier;

    use super::*;
    use crate::pem::read_certs;

    fn roots(ca: &CaFiles) -> Arc<RootCertStore> {
        let mut roots = RootCertStore::empty();
        for cert in read_certs(&ca.cert).unwrap() {
            roots.add(cert).unwrap();
        }
        Arc::new(roots)
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn sans(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_leaf_verifies_against_its_ca_as_server_and_client_for_the_names_asked() {
        // Proves: the leaf chains to the CA for both uses (server and
        // client authentication), for each name and address it was issued
        // for and for no other; the private keys are readable by their
        // owner alone.
        let dir = tempfile::tempdir().unwrap();
        let ca = init_ca(&dir.path().join("ca")).unwrap();
        assert_eq!(mode(&ca.key), 0o600);
        let leaf = issue_leaf(
            &dir.path().join("ca"),
            "node1",
            &sans(&["127.0.0.1", "node1", "node1.strata.svc"]),
            &dir.path().join("certs"),
        )
        .unwrap();
        assert_eq!(mode(&leaf.key), 0o600);
        assert_eq!(leaf.cert, dir.path().join("certs/node1.pem"));
        let chain = read_certs(&leaf.cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = WebPkiServerVerifier::builder_with_provider(roots(&ca), provider.clone())
            .build()
            .unwrap();
        let now = UnixTime::now();
        for name in ["127.0.0.1", "node1", "node1.strata.svc"] {
            let name = ServerName::try_from(name).unwrap();
            server
                .verify_server_cert(&chain[0], &[], &name, &[], now)
                .unwrap_or_else(|e| panic!("{name:?}: {e}"));
        }
        for other in ["127.0.0.2", "node2"] {
            let name = ServerName::try_from(other).unwrap();
            assert!(
                server
                    .verify_server_cert(&chain[0], &[], &name, &[], now)
                    .is_err(),
                "the leaf is not valid for {other}"
            );
        }
        let client = WebPkiClientVerifier::builder_with_provider(roots(&ca), provider)
            .build()
            .unwrap();
        client.verify_client_cert(&chain[0], &[], now).unwrap();
    }

    #[test]
    fn a_leaf_of_another_ca_does_not_verify() {
        // Proves: trust is the CA's, not any well-formed certificate's.
        let dir = tempfile::tempdir().unwrap();
        let ours = init_ca(&dir.path().join("ours")).unwrap();
        init_ca(&dir.path().join("theirs")).unwrap();
        let leaf = issue_leaf(
            &dir.path().join("theirs"),
            "node1",
            &sans(&["127.0.0.1"]),
            dir.path(),
        )
        .unwrap();
        let chain = read_certs(&leaf.cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = WebPkiClientVerifier::builder_with_provider(roots(&ours), provider)
            .build()
            .unwrap();
        assert!(
            client
                .verify_client_cert(&chain[0], &[], UnixTime::now())
                .is_err()
        );
    }

    #[test]
    fn nothing_is_overwritten() {
        // Proves: a second init, or a second cert of the same name, is
        // refused and leaves the files as they were.
        let dir = tempfile::tempdir().unwrap();
        let ca = init_ca(dir.path()).unwrap();
        let key = std::fs::read(&ca.key).unwrap();
        assert!(matches!(init_ca(dir.path()), Err(TlsError::Exists { .. })));
        assert_eq!(std::fs::read(&ca.key).unwrap(), key);
        let out = dir.path().join("certs");
        let leaf = issue_leaf(dir.path(), "gw", &sans(&["gw"]), &out).unwrap();
        let leaf_key = std::fs::read(&leaf.key).unwrap();
        let err = issue_leaf(dir.path(), "gw", &sans(&["gw"]), &out).unwrap_err();
        assert!(matches!(err, TlsError::Exists { .. }), "{err}");
        assert_eq!(std::fs::read(&leaf.key).unwrap(), leaf_key);
    }

    #[test]
    fn bad_input_is_refused_with_its_reason() {
        // Proves: a bad name, a bad SAN, no SAN or a missing CA is a clear
        // error and writes nothing.
        let dir = tempfile::tempdir().unwrap();
        init_ca(dir.path()).unwrap();
        let out = dir.path().join("certs");
        let err = issue_leaf(dir.path(), "../x", &sans(&["a"]), &out).unwrap_err();
        assert!(matches!(err, TlsError::Name(_)), "{err}");
        let err = issue_leaf(dir.path(), "n", &sans(&["not a name"]), &out).unwrap_err();
        assert!(matches!(err, TlsError::San(_)), "{err}");
        let err = issue_leaf(dir.path(), "n", &[], &out).unwrap_err();
        assert!(matches!(err, TlsError::NoSans), "{err}");
        let err = issue_leaf(&dir.path().join("none"), "n", &sans(&["a"]), &out).unwrap_err();
        assert!(err.to_string().contains("ca-key.pem"), "{err}");
        assert!(!out.exists());
    }
}
