//! `strata auth`: making the keys a cluster trusts and the tokens that
//! carry a role, offline.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Subcommand;
use strata_auth::{KeyPair, Role, Signer};

#[derive(Subcommand)]
pub enum AuthCmd {
    /// Make a key pair in DIR: `signing-key.pem` (private, mode 0600: it
    /// makes tokens) and `jwks.json` (public: give it to every node as
    /// --auth-jwks, and to the gateway).
    Keygen {
        #[arg(long)]
        out: PathBuf,
    },
    /// Print a token for SUBJECT with ROLE, signed with the private key.
    Token {
        /// The private key (`signing-key.pem` from `keygen`).
        #[arg(long)]
        key: PathBuf,
        /// read, write or admin.
        #[arg(long)]
        role: Role,
        /// Who the token is for (shown in refusals and the console).
        #[arg(long, default_value = "operator")]
        subject: String,
        /// How long it is valid (`12h`, `30d`).
        #[arg(long, value_parser = humantime::parse_duration, default_value = "24h")]
        ttl: Duration,
    },
}

pub fn run(cmd: AuthCmd, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        AuthCmd::Keygen { out: dir } => {
            let files = KeyPair::generate().write_to(&dir)?;
            writeln!(
                out,
                "private key {} (keep it secret)",
                files.signing_key.display()
            )?;
            writeln!(out, "public keys {} (--auth-jwks)", files.jwks.display())?;
        }
        AuthCmd::Token {
            key,
            role,
            subject,
            ttl,
        } => {
            let signer = Signer::from_file(&key)?;
            writeln!(out, "{}", signer.sign(&subject, role, ttl)?)?;
        }
    }
    Ok(())
}
