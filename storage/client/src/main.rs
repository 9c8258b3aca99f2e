//! `strata`: the command-line client. Talks gRPC to the gateway by default.

use std::io::Write;

use anyhow::Context;
use clap::{Parser, Subcommand};
use strata_client::proto::txn_op_result::Result as OpResult;
use strata_client::proto::{ChangeKind, Role};
use strata_client::proto_backup::BackupInfo;
use strata_client::{Client, ScanSelector, WatchSelector};

mod auth_cmd;
mod tls_cmd;
mod txn_args;

#[derive(Parser)]
#[command(name = "strata", version, about = "Command-line client for Strata")]
struct Cli {
    /// gRPC endpoint: the gateway or any node.
    #[arg(
        long,
        global = true,
        env = "STRATA_ENDPOINT",
        default_value = "http://127.0.0.1:8080"
    )]
    endpoint: String,
    /// A token to send with every call (`strata auth token`); without one
    /// the cluster answers as its anonymous role allows.
    #[arg(
        long,
        global = true,
        env = "STRATA_TOKEN",
        hide_env_values = true,
        conflicts_with = "token_file"
    )]
    token: Option<String>,
    /// A file holding the token (`./dev up` writes one for the demo).
    #[arg(long, global = true, env = "STRATA_TOKEN_FILE")]
    token_file: Option<std::path::PathBuf>,
    /// The CA certificate (PEM) the endpoint's certificate must chain to,
    /// for an `https://` endpoint: the cluster's `ca.pem` (`strata tls
    /// init`) or whoever issued the gateway's.
    #[arg(long, global = true, env = "STRATA_CA_FILE")]
    ca_file: Option<std::path::PathBuf>,
    /// A certificate (PEM) to show the endpoint: a node with TLS on asks
    /// every caller for one issued by the cluster's CA (`strata tls cert`).
    #[arg(long, global = true, env = "STRATA_CERT_FILE", requires_all = ["key_file", "ca_file"])]
    cert_file: Option<std::path::PathBuf>,
    /// The private key of --cert-file.
    #[arg(long, global = true, env = "STRATA_KEY_FILE", requires = "cert_file")]
    key_file: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

impl Cli {
    /// The token given, if any.
    fn token(&self) -> anyhow::Result<Option<String>> {
        match (&self.token, &self.token_file) {
            (Some(t), _) => Ok(Some(t.clone())),
            (None, Some(path)) => std::fs::read_to_string(path)
                .map(|t| Some(t.trim().to_string()))
                .with_context(|| format!("reading the token file {}", path.display())),
            (None, None) => Ok(None),
        }
    }

    /// What the client trusts and shows over TLS, read from the files given.
    fn tls(&self) -> anyhow::Result<strata_client::TlsOptions> {
        let read = |path: &std::path::PathBuf, what: &str| {
            std::fs::read(path).with_context(|| format!("reading the {what} {}", path.display()))
        };
        let ca_pem = self
            .ca_file
            .as_ref()
            .map(|p| read(p, "CA file"))
            .transpose()?;
        let identity = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => Some((read(cert, "certificate")?, read(key, "key")?)),
            _ => None,
        };
        if ca_pem.is_some() != self.endpoint.starts_with("https://") {
            anyhow::bail!(
                "--ca-file goes with an https:// endpoint, and an https:// endpoint needs --ca-file (endpoint {})",
                self.endpoint
            );
        }
        Ok(strata_client::TlsOptions { ca_pem, identity })
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Keys and tokens (offline: no cluster needed).
    Auth {
        #[command(subcommand)]
        action: auth_cmd::AuthCmd,
    },
    /// The cluster's CA and its certificates (offline: no cluster needed).
    Tls {
        #[command(subcommand)]
        action: tls_cmd::TlsCmd,
    },
    /// Store a value (from the argument, or stdin with `-`).
    Put {
        key: String,
        value: String,
        /// Put the key under a lease of its own with this TTL (`30s`,
        /// `1500ms`): it is deleted unless the lease is kept alive
        /// (`strata lease keep-alive ID`). Prints the lease's id.
        #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "lease")]
        ttl: Option<std::time::Duration>,
        /// Put the key under this existing lease.
        #[arg(long)]
        lease: Option<u64>,
    },
    /// Print a value to stdout (raw bytes).
    Get {
        key: String,
        /// Serve from the answering replica without a ReadIndex round.
        #[arg(long)]
        stale: bool,
    },
    /// Delete a key.
    #[command(alias = "delete")]
    Del { key: String },
    /// List keys by prefix or range, one `key<TAB>value` per line.
    Scan {
        #[arg(long, conflicts_with_all = ["start", "end"])]
        prefix: Option<String>,
        #[arg(long)]
        start: Option<String>,
        #[arg(long)]
        end: Option<String>,
        /// At most this many pairs in all.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        keys_only: bool,
    },
    /// Print changes to keys as they are committed, one per line:
    /// `INDEX<TAB>put<TAB>KEY<TAB>VALUE` or `INDEX<TAB>delete<TAB>KEY`.
    /// Resumes by itself, without a gap, when its node goes away.
    Watch {
        /// One key.
        #[arg(long, conflicts_with_all = ["prefix", "start", "end"])]
        key: Option<String>,
        #[arg(long, conflicts_with_all = ["start", "end"])]
        prefix: Option<String>,
        #[arg(long)]
        start: Option<String>,
        #[arg(long)]
        end: Option<String>,
        /// Replay the changes from this raft index on first (default: only
        /// changes from now).
        #[arg(long, default_value_t = 0)]
        from_index: u64,
        /// Stop after this many changes.
        #[arg(long)]
        count: Option<u64>,
        /// Also print `INDEX<TAB>progress` lines: everything through INDEX
        /// has been printed.
        #[arg(long)]
        progress: bool,
    },
    /// Run a transaction: when every --if holds, the --then operations,
    /// else the --else ones, atomically. Prints `succeeded` or `failed`
    /// with the index, then one line per operation that ran.
    #[command(
        after_help = "Conditions: 'value(KEY) OP VALUE', 'exists(KEY) = true|false', \
        'create(KEY) OP INDEX', 'mod(KEY) OP INDEX', with OP one of = != < >.\n\
        Operations: 'put KEY VALUE', 'del KEY', 'get KEY', 'range START [END [LIMIT]]'.\n\
        Example: strata txn --if 'mod(acct/a) = 12' --then 'put acct/a 7' --else 'get acct/a'"
    )]
    Txn {
        /// A condition; all must hold.
        #[arg(long = "if", value_parser = txn_args::compare)]
        compare: Vec<strata_client::proto::Compare>,
        /// An operation run when every condition holds.
        #[arg(long = "then", value_parser = txn_args::op)]
        success: Vec<strata_client::proto::TxnOp>,
        /// An operation run when some condition does not hold.
        #[arg(long = "else", value_parser = txn_args::op)]
        failure: Vec<strata_client::proto::TxnOp>,
    },
    /// Leases: keys put under one are deleted when it ends (revoked, or
    /// not kept alive for its TTL).
    Lease {
        #[command(subcommand)]
        action: LeaseCmd,
    },
    /// Backups: save the cluster's data to a file, show what a file holds,
    /// load a file into a new cluster.
    Snapshot {
        #[command(subcommand)]
        action: SnapshotCmd,
    },
    /// Membership: list, add a learner, promote it, remove a member.
    Member {
        #[command(subcommand)]
        action: MemberCmd,
    },
    /// Leadership commands.
    Leader {
        #[command(subcommand)]
        action: LeaderCmd,
    },
    /// Show every node's role, term and indexes.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// The ranges of keys and the raft groups serving them.
    Range {
        #[command(subcommand)]
        action: RangeCmd,
    },
}

#[derive(Subcommand)]
enum RangeCmd {
    /// Every range: its id, its keys, its leader and term, its voters and
    /// learners.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Split the range holding KEY at KEY: a new range, with the same
    /// members, serves the keys from KEY on (needs an admin token).
    Split {
        key: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum LeaseCmd {
    /// Grant a lease; prints its id and TTL.
    Grant {
        /// `30s`, `1500ms`, `2m` (at least 1 s).
        #[arg(value_parser = humantime::parse_duration)]
        ttl: std::time::Duration,
        /// Pick the id (1 to 2^53 - 1); default: the cluster picks.
        #[arg(long, default_value_t = 0)]
        id: u64,
    },
    /// End a lease now, deleting its keys.
    Revoke { id: u64 },
    /// Keep a lease alive: once with --once, else every third of its TTL
    /// until interrupted or the lease ends.
    KeepAlive {
        id: u64,
        #[arg(long)]
        once: bool,
    },
    /// A lease's TTL and time left (by the leader's clock), and with
    /// --keys the keys under it.
    Ttl {
        id: u64,
        #[arg(long)]
        keys: bool,
    },
    /// Every lease with its TTL and time left.
    List,
}

#[derive(Subcommand)]
enum MemberCmd {
    /// List members and whether each votes.
    List,
    /// Add a node (started with --join, or any empty node) as a learner.
    Add { id: u64, address: String },
    /// Make a learner a voter (with --replace, removing that voter in the
    /// same joint-consensus change).
    Promote {
        id: u64,
        #[arg(long)]
        replace: Option<u64>,
    },
    /// Remove a voter or learner.
    Remove { id: u64 },
}

#[derive(Subcommand)]
enum SnapshotCmd {
    /// Save every key, as of one linearizable read, to FILE (written to
    /// FILE.partial first, renamed once whole).
    Save { file: std::path::PathBuf },
    /// Check FILE whole and print its raft index, key and lease counts,
    /// the cluster it came from and its checksum.
    Status { file: std::path::PathBuf },
    /// Load FILE into the running cluster at --endpoint, which must hold
    /// no key (a new cluster) unless --onto-data. Keys get this cluster's
    /// raft indexes and leases start their TTL afresh; `strata-node
    /// restore` builds members' data directories instead, keeping both.
    Restore {
        file: std::path::PathBuf,
        #[arg(long)]
        onto_data: bool,
    },
}

#[derive(Subcommand)]
enum LeaderCmd {
    /// Hand leadership to another voter and wait until it leads.
    Transfer {
        node_id: u64,
        /// The range whose leadership moves (its id in `strata range
        /// list`); the first range when absent.
        #[arg(long, default_value_t = 0)]
        range: u64,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let anonymous = cli.token.is_none() && cli.token_file.is_none();
    run(cli).await.map_err(|e| {
        if anonymous && wants_a_token(&e) {
            e.context(
                "refused without a token: give one with --token, STRATA_TOKEN or STRATA_TOKEN_FILE",
            )
        } else {
            e
        }
    })
}

/// Whether the cluster refused the call for want of a token
/// (UNAUTHENTICATED).
fn wants_a_token(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(c.downcast_ref::<strata_client::ClientError>(),
            Some(strata_client::ClientError::Status(s)) if s.code() == tonic::Code::Unauthenticated)
    })
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    // Reading a backup file needs no cluster.
    if let Cmd::Snapshot {
        action: SnapshotCmd::Status { file },
    } = &cli.command
    {
        let input =
            std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
        let info = strata_client::proto_backup::BackupReader::new(std::io::BufReader::new(input))
            .and_then(|r| r.check_rest())
            .with_context(|| format!("{} is not a whole backup", file.display()))?;
        return Ok(describe(&mut out, &info)?);
    }
    if let Cmd::Auth { action } = cli.command {
        return auth_cmd::run(action, &mut out);
    }
    if let Cmd::Tls { action } = cli.command {
        return tls_cmd::run(action, &mut out);
    }
    let mut client = Client::connect_tls(&cli.endpoint, &cli.tls()?).await?;
    if let Some(token) = cli.token()? {
        client = client.with_token(&token)?;
    }
    match cli.command {
        Cmd::Put {
            key,
            value,
            ttl,
            lease,
        } => {
            let value = if value == "-" {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
                    .context("reading stdin")?;
                buf
            } else {
                value.into_bytes()
            };
            let key = key.into_bytes();
            let (h, lease) = match (ttl, lease) {
                (Some(ttl), _) => client.put_with_ttl(key, value, ttl).await?,
                (None, Some(lease)) => (client.put_with_lease(key, value, lease).await?, lease),
                (None, None) => (client.put(key, value).await?, 0),
            };
            write!(
                out,
                "OK index={} term={} node={}",
                h.index, h.term, h.node_id
            )?;
            if lease != 0 {
                write!(out, " lease={lease}")?;
            }
            writeln!(out)?;
        }
        Cmd::Lease { action } => lease(&client, action, &mut out).await?,
        Cmd::Get { key, stale } => match client.get(key.clone().into_bytes(), stale).await? {
            Some(v) => {
                out.write_all(&v)?;
                if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                    writeln!(out)?;
                }
            }
            None => anyhow::bail!("key not found: {key}"),
        },
        Cmd::Del { key } => {
            let existed = client.delete(key.into_bytes()).await?;
            writeln!(out, "{}", if existed { "deleted" } else { "not found" })?;
        }
        Cmd::Scan {
            prefix,
            start,
            end,
            limit,
            keys_only,
        } => {
            let selector = match (prefix, start, end) {
                (Some(p), _, _) => ScanSelector::Prefix(p.into_bytes()),
                (None, None, None) => ScanSelector::All,
                (None, s, e) => ScanSelector::Range {
                    start: s.unwrap_or_default().into_bytes(),
                    end: e.unwrap_or_default().into_bytes(),
                },
            };
            let mut token = Vec::new();
            let mut left = limit;
            while left > 0 {
                let page_limit = left.min(1000) as u32;
                let page = client
                    .scan(selector.clone(), page_limit, token, keys_only)
                    .await?;
                left -= page.kvs.len().min(left);
                for kv in &page.kvs {
                    out.write_all(&kv.key)?;
                    if !keys_only {
                        out.write_all(b"\t")?;
                        out.write_all(&kv.value)?;
                    }
                    out.write_all(b"\n")?;
                }
                if page.next_page_token.is_empty() {
                    break;
                }
                token = page.next_page_token;
            }
        }
        Cmd::Watch {
            key,
            prefix,
            start,
            end,
            from_index,
            count,
            progress,
        } => {
            let selector = match (key, prefix, start, end) {
                (Some(k), ..) => WatchSelector::Key(k.into_bytes()),
                (None, Some(p), ..) => WatchSelector::Prefix(p.into_bytes()),
                (None, None, None, None) => WatchSelector::All,
                (None, None, s, e) => WatchSelector::Range {
                    start: s.unwrap_or_default().into_bytes(),
                    end: e.unwrap_or_default().into_bytes(),
                },
            };
            let mut watcher = client.watch(selector, from_index, None);
            let mut left = count.unwrap_or(u64::MAX);
            while left > 0 {
                let m = watcher.next().await?;
                if m.events.is_empty() && progress {
                    writeln!(out, "{}\tprogress", m.index)?;
                }
                for e in m.events.iter().take(left.min(usize::MAX as u64) as usize) {
                    write!(out, "{}\t", e.index)?;
                    if e.kind == ChangeKind::Delete as i32 {
                        out.write_all(b"delete\t")?;
                        out.write_all(&e.key)?;
                    } else {
                        out.write_all(b"put\t")?;
                        out.write_all(&e.key)?;
                        out.write_all(b"\t")?;
                        out.write_all(&e.value)?;
                    }
                    out.write_all(b"\n")?;
                    left -= 1;
                }
                out.flush()?;
            }
        }
        Cmd::Txn {
            compare,
            success,
            failure,
        } => {
            let r = client.txn(compare, success, failure).await?;
            let h = r.header.unwrap_or_default();
            let verdict = if r.succeeded { "succeeded" } else { "failed" };
            writeln!(
                out,
                "{verdict} index={} term={} node={}",
                h.index, h.term, h.node_id
            )?;
            for result in r.results.into_iter().filter_map(|r| r.result) {
                print_result(&mut out, result)?;
            }
        }
        Cmd::Snapshot { action } => snapshot(&client, action, &mut out).await?,
        Cmd::Auth { .. } | Cmd::Tls { .. } => unreachable!("run before connecting"),
        Cmd::Member { action } => {
            let members = match action {
                MemberCmd::List => client.members().await?,
                MemberCmd::Add { id, address } => client.add_member(id, &address).await?,
                MemberCmd::Promote { id, replace } => {
                    client.promote_member(id, replace.unwrap_or(0)).await?
                }
                MemberCmd::Remove { id } => client.remove_member(id).await?,
            };
            for m in members {
                let kind = if m.voter { "voter" } else { "learner" };
                writeln!(out, "{:<4} {:<22} {kind}", m.id, m.address)?;
            }
        }
        Cmd::Leader {
            action: LeaderCmd::Transfer { node_id, range },
        } => {
            let leader = client.transfer_range_leader(range, node_id).await?;
            writeln!(out, "leader is now node {leader}")?;
        }
        Cmd::Range {
            action: RangeCmd::List { json },
        } => {
            let st = client.status().await?;
            ranges(&st.ranges, json, &mut out)?;
        }
        Cmd::Range {
            action: RangeCmd::Split { key, json },
        } => {
            let r = client.split_range(key.into_bytes()).await?;
            if !json {
                let what = if r.split {
                    format!("split at index {}", r.index)
                } else {
                    "a range started there already; nothing split".into()
                };
                writeln!(out, "{what}")?;
            }
            ranges(r.range.as_slice(), json, &mut out)?;
        }
        Cmd::Status { json } => {
            let st = client.status().await?;
            if json {
                let nodes: Vec<_> = st
                    .nodes
                    .iter()
                    .map(|n| {
                        serde_json::json!({"id": n.id, "address": n.address, "role": role(n.role), "term": n.term,
                        "commit_index": n.commit_index, "applied_index": n.applied_index, "healthy": n.healthy,
                        "proven": n.proven, "cluster_id": hex_id(n.cluster_id)})
                    })
                    .collect();
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"cluster_id": hex_id(st.cluster_id), "leader_id": st.leader_id,
                        "term": st.term, "nodes": nodes})
                )?;
            } else {
                writeln!(
                    out,
                    "leader {} term {} cluster {}",
                    st.leader_id,
                    st.term,
                    cluster_id(st.cluster_id)
                )?;
                writeln!(
                    out,
                    "{:<4} {:<22} {:<10} {:>6} {:>10} {:>10} HEALTH",
                    "ID", "ADDRESS", "ROLE", "TERM", "COMMIT", "APPLIED"
                )?;
                for n in &st.nodes {
                    writeln!(
                        out,
                        "{:<4} {:<22} {:<10} {:>6} {:>10} {:>10} {}",
                        n.id,
                        n.address,
                        role(n.role),
                        n.term,
                        n.commit_index,
                        n.applied_index,
                        if n.healthy && !n.proven {
                            "ok, new disk: not voting until vouched for".to_string()
                        } else if n.healthy {
                            "ok".to_string()
                        } else {
                            format!("DOWN {}", n.error)
                        }
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// A transaction's operation result: `put`, `delete deleted|absent`,
/// `get KEY<TAB>VALUE<TAB>create=C mod=M` (or `get absent`), and for a
/// range one such line per pair then `range more` when it was cut.
fn print_result(out: &mut impl Write, result: OpResult) -> std::io::Result<()> {
    let pair = |out: &mut dyn Write, verb: &str, kv: &strata_client::proto::KeyValue| {
        write!(out, "{verb} ")?;
        out.write_all(&kv.key)?;
        out.write_all(b"\t")?;
        out.write_all(&kv.value)?;
        writeln!(out, "\tcreate={} mod={}", kv.create_index, kv.mod_index)
    };
    match result {
        OpResult::Put(_) => writeln!(out, "put"),
        OpResult::Delete(d) => {
            writeln!(
                out,
                "delete {}",
                if d.deleted { "deleted" } else { "absent" }
            )
        }
        OpResult::Get(g) => match g.kv {
            Some(kv) => pair(out, "get", &kv),
            None => writeln!(out, "get absent"),
        },
        OpResult::Range(r) => {
            for kv in &r.kvs {
                pair(out, "range", kv)?;
            }
            if r.more {
                writeln!(out, "range more")?;
            }
            Ok(())
        }
    }
}

/// `strata lease ...`.
async fn lease(client: &Client, action: LeaseCmd, out: &mut impl Write) -> anyhow::Result<()> {
    match action {
        LeaseCmd::Grant { ttl, id } => {
            let r = client.lease_grant(ttl, id).await?;
            writeln!(out, "lease {} ttl={}ms", r.id, r.ttl_ms)?;
        }
        LeaseCmd::Revoke { id } => {
            let keys = client.lease_revoke(id).await?;
            writeln!(out, "revoked lease {id}: {keys} keys deleted")?;
        }
        LeaseCmd::KeepAlive { id, once } => loop {
            let Some(ttl) = client.lease_keep_alive_once(id).await? else {
                anyhow::bail!("lease {id} has ended: its keys are gone");
            };
            writeln!(out, "lease {id} ttl={}ms", ttl.as_millis())?;
            out.flush()?;
            if once {
                break;
            }
            tokio::time::sleep(ttl / 3).await;
        },
        LeaseCmd::Ttl { id, keys } => {
            let r = client.lease_time_to_live(id, keys).await?;
            writeln!(
                out,
                "lease {} ttl={}ms remaining={}ms",
                r.id, r.ttl_ms, r.remaining_ms
            )?;
            for k in &r.keys {
                out.write_all(k)?;
                out.write_all(b"\n")?;
            }
        }
        LeaseCmd::List => {
            for l in client.leases().await? {
                writeln!(
                    out,
                    "{:<20} ttl={}ms remaining={}ms",
                    l.id, l.ttl_ms, l.remaining_ms
                )?;
            }
        }
    }
    Ok(())
}

/// One line that says what a backup holds.
fn describe(out: &mut impl Write, info: &BackupInfo) -> std::io::Result<()> {
    writeln!(
        out,
        "index {} keys {} leases {} cluster {} sha256 {}",
        info.index,
        info.pairs,
        info.leases,
        cluster_id(info.cluster_id),
        info.sha256_hex()
    )
}

/// `strata snapshot save|restore` (status is read before connecting).
async fn snapshot(
    client: &Client,
    action: SnapshotCmd,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match action {
        SnapshotCmd::Save { file } => {
            let partial = std::path::PathBuf::from(format!("{}.partial", file.display()));
            let mut f = std::fs::File::create(&partial)
                .with_context(|| format!("creating {}", partial.display()))?;
            let info = client.backup(|chunk| f.write_all(chunk)).await?;
            f.sync_all()?;
            std::fs::rename(&partial, &file)?;
            describe(out, &info)?;
        }
        SnapshotCmd::Status { .. } => unreachable!("read before connecting"),
        SnapshotCmd::Restore { file, onto_data } => {
            let path = file.clone();
            let open = move || std::fs::File::open(&path).map(std::io::BufReader::new);
            let restored = client
                .restore(open, onto_data)
                .await
                .with_context(|| format!("restoring {}", file.display()))?;
            describe(out, &restored.info)?;
            writeln!(out, "restored in {} batches", restored.batches)?;
            if restored.expired > 0 {
                writeln!(
                    out,
                    "{} keys left out: their lease ran out in this cluster before they were reached",
                    restored.expired
                )?;
            }
        }
    }
    Ok(())
}

fn role(r: i32) -> &'static str {
    match Role::try_from(r).unwrap_or(Role::Unknown) {
        Role::Leader => "leader",
        Role::Follower => "follower",
        Role::Candidate => "candidate",
        Role::Learner => "learner",
        Role::Unknown => "unknown",
    }
}

/// A cluster id as 16 hex digits, or "unnamed" before the first leader
/// named the cluster.
fn cluster_id(id: u64) -> String {
    if id == 0 {
        "unnamed".into()
    } else {
        hex_id(id)
    }
}

/// A cluster id as the REST API shows it: 16 hex digits, empty for none.
fn hex_id(id: u64) -> String {
    if id == 0 {
        String::new()
    } else {
        format!("{id:016x}")
    }
}

/// A range's bound for people: its key, escaped where not printable.
fn bound(key: &[u8], none: &str) -> String {
    if key.is_empty() {
        none.to_string()
    } else {
        key.escape_ascii().to_string()
    }
}

/// `strata range list`: a table, or with `json` one object per range.
fn ranges(
    ranges: &[strata_client::proto::RangeStatus],
    json: bool,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    if json {
        let list: Vec<_> = ranges
            .iter()
            .map(|r| {
                serde_json::json!({"id": r.id, "start": bound(&r.start, ""), "end": bound(&r.end, ""),
                    "voters": r.voters, "learners": r.learners, "leader_id": r.leader_id, "term": r.term})
            })
            .collect();
        return writeln!(out, "{}", serde_json::json!({ "ranges": list }));
    }
    writeln!(
        out,
        "{:<6} {:<20} {:<20} {:>6} {:>6} {:<12} LEARNERS",
        "RANGE", "START", "END", "LEADER", "TERM", "VOTERS"
    )?;
    let ids = |ids: &[u64]| {
        if ids.is_empty() {
            "-".to_string()
        } else {
            ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        }
    };
    for r in ranges {
        writeln!(
            out,
            "{:<6} {:<20} {:<20} {:>6} {:>6} {:<12} {}",
            r.id,
            bound(&r.start, "(first key)"),
            bound(&r.end, "(last key)"),
            r.leader_id,
            r.term,
            ids(&r.voters),
            ids(&r.learners),
        )?;
    }
    Ok(())
}
