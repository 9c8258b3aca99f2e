//! A key pair on disk, as `strata auth keygen` leaves it: the private key
//! readable by its owner alone, the public keys beside it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{AuthError, KeyPair};

/// The private key's file name in a key directory.
pub const SIGNING_KEY_FILE: &str = "signing-key.pem";
/// The public keys' file name in a key directory.
pub const JWKS_FILE: &str = "jwks.json";

/// Where a pair was written.
#[derive(Debug, Clone)]
pub struct KeyFiles {
    pub signing_key: PathBuf,
    pub jwks: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> AuthError {
    let path = path.display().to_string();
    move |source| AuthError::Io { path, source }
}

impl KeyPair {
    /// Writes this pair into `dir` (made if missing): `signing-key.pem`
    /// (mode 0600) and `jwks.json`. Refuses to replace a private key
    /// already there, whose tokens would stop working.
    pub fn write_to(&self, dir: &Path) -> Result<KeyFiles, AuthError> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let signing_key = dir.join(SIGNING_KEY_FILE);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&signing_key)
            .map_err(io(&signing_key))?;
        file.write_all(self.private_pem().as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(io(&signing_key))?;
        let jwks = dir.join(JWKS_FILE);
        std::fs::write(&jwks, self.jwks_json()).map_err(io(&jwks))?;
        Ok(KeyFiles { signing_key, jwks })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use crate::{Role, Signer, Verifier};

    use super::*;

    #[test]
    fn a_written_pair_reads_back_and_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let files = KeyPair::generate().write_to(dir.path()).unwrap();
        let mode = std::fs::metadata(&files.signing_key)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let token = Signer::from_file(&files.signing_key)
            .unwrap()
            .sign("a", Role::Read, Duration::from_secs(60))
            .unwrap();
        let claims = Verifier::from_file(&files.jwks)
            .unwrap()
            .verify(&token)
            .unwrap();
        assert_eq!(claims.role, Role::Read);
        let before = std::fs::read(&files.signing_key).unwrap();
        assert!(KeyPair::generate().write_to(dir.path()).is_err());
        assert_eq!(std::fs::read(&files.signing_key).unwrap(), before);
    }
}
