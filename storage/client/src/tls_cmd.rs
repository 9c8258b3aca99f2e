//! `strata tls`: the cluster's certificate authority and the certificates
//! it issues to nodes and the gateway, offline.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum TlsCmd {
    /// Make the cluster's CA in DIR: `ca.pem` (public: give it to every
    /// node as --tls-ca and to clients as --ca-file) and `ca-key.pem`
    /// (private, mode 0600: it issues certificates the cluster trusts).
    /// Never replaces a CA already there.
    Init {
        #[arg(long)]
        out: PathBuf,
    },
    /// Issue a certificate for NAME (a node or the gateway), signed by the
    /// CA in --ca, good for serving and for connecting: `NAME.pem` and
    /// `NAME-key.pem` (mode 0600) in --out. Never replaces files there.
    Cert {
        /// The CA's directory (from `tls init`).
        #[arg(long)]
        ca: PathBuf,
        #[arg(long)]
        name: String,
        /// The DNS names and IP addresses it is reached by, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        san: Vec<String>,
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn run(cmd: TlsCmd, out: &mut impl Write) -> anyhow::Result<()> {
    match cmd {
        TlsCmd::Init { out: dir } => {
            let files = strata_tls::init_ca(&dir)?;
            writeln!(out, "CA key {} (keep it secret)", files.key.display())?;
            writeln!(
                out,
                "CA certificate {} (--tls-ca, --ca-file)",
                files.cert.display()
            )?;
        }
        TlsCmd::Cert {
            ca,
            name,
            san,
            out: dir,
        } => {
            let files = strata_tls::issue_leaf(&ca, &name, &san, &dir)?;
            writeln!(out, "certificate {}", files.cert.display())?;
            writeln!(out, "key {} (keep it secret)", files.key.display())?;
        }
    }
    Ok(())
}
