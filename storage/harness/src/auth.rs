//! The keys a local cluster's nodes trust and the tokens that carry a role
//! to them: made in `<dir>/auth` on the first start, and read from there
//! on later ones, so tokens stay valid across restarts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use strata_auth::{JWKS_FILE, KeyPair, Role, SIGNING_KEY_FILE, Signer};

use crate::command::NodeSpec;

/// What a local cluster's requests without a token may do: read and
/// write keys, as a demo bound to 127.0.0.1 allows (the node's own default
/// is none). Admin needs a token.
pub const LOCAL_ANONYMOUS_ROLE: &str = "write";

/// How long the tokens made here are valid.
const TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// The file of the token the nodes send with their own requests.
const NODE_TOKEN_FILE: &str = "node.token";

/// Sets `spec` to take the tokens of the pair kept in `dir`, requests
/// without one as `anonymous_role`, and to send the node token there with
/// its own requests. Touches no file: the pair is made when the cluster
/// starts ([`ClusterAuth::open_or_create`]).
pub fn configure(spec: &mut NodeSpec, dir: &Path, anonymous_role: &str) {
    spec.auth_jwks = Some(dir.join(JWKS_FILE));
    spec.anonymous_role = Some(anonymous_role.to_string());
    spec.token_file = Some(dir.join(NODE_TOKEN_FILE));
}

/// The public keys' file of the pair kept in `dir`.
pub fn jwks_file(dir: &Path) -> PathBuf {
    dir.join(JWKS_FILE)
}

/// A cluster's key pair on disk.
pub struct ClusterAuth {
    jwks: PathBuf,
    signer: Signer,
    node_token: PathBuf,
}

impl ClusterAuth {
    /// The pair in `dir`, made there when there is none yet.
    pub fn open_or_create(dir: &Path) -> Result<Self> {
        let signing_key = dir.join(SIGNING_KEY_FILE);
        if !signing_key.exists() {
            KeyPair::generate()
                .write_to(dir)
                .with_context(|| format!("making the cluster's keys in {}", dir.display()))?;
        }
        let auth = ClusterAuth {
            jwks: dir.join(JWKS_FILE),
            signer: Signer::from_file(&signing_key)?,
            node_token: dir.join(NODE_TOKEN_FILE),
        };
        // A node's join request needs the admin role, its canary's writes
        // the write role.
        auth.write_token(&auth.node_token, "node", Role::Admin)?;
        Ok(auth)
    }

    /// The file of the token the nodes send with their own requests.
    pub fn node_token_file(&self) -> &Path {
        &self.node_token
    }

    /// The public keys' file (`--auth-jwks`).
    pub fn jwks(&self) -> &Path {
        &self.jwks
    }

    /// A token with `role`, for `subject`.
    pub fn token(&self, subject: &str, role: Role) -> String {
        self.signer
            .sign(subject, role, TOKEN_TTL)
            .expect("a token signs with a key that loaded")
    }

    /// Sets `spec` to take this pair's tokens, and requests without one as
    /// [`LOCAL_ANONYMOUS_ROLE`].
    pub fn configure(&self, spec: &mut NodeSpec) {
        spec.auth_jwks = Some(self.jwks.clone());
        spec.anonymous_role = Some(LOCAL_ANONYMOUS_ROLE.to_string());
        spec.token_file = Some(self.node_token.clone());
    }

    /// Writes an admin token to `path` (mode 0600), for the CLI
    /// (`--token-file`) and the console's sign-in.
    pub fn write_admin_token(&self, path: &Path) -> Result<()> {
        self.write_token(path, "admin", Role::Admin)
    }

    fn write_token(&self, path: &Path, subject: &str, role: Role) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("writing {}", path.display()))?;
        writeln!(file, "{}", self.token(subject, role))?;
        Ok(())
    }
}
