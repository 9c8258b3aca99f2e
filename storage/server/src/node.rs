//! Assembles a node: engine, raft peer, transport and the API on one port.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use strata_engine::{Engine, FileSystem, Options as EngineOptions, StdFs, WalMode};
use strata_raft::{Members, Peer, PeerConfig, StateMachine};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::canary::CanaryState;
use crate::channels::MemberChannels;
use crate::config::NodeConfig;
use crate::core::Core;
use crate::groups::{Groups, StartGroup};
use crate::grpc::raft::RaftService;
use crate::member_status::spawn_watch;
use crate::metrics::NodeMetrics;
use crate::peer_net::{PeerNet, Split};
use crate::rest::AppState;
use crate::slow_requests::SlowRequests;
use crate::stats::StatsSource;
use crate::stats::activity::ActivityLog;
use crate::stats::raft_history::RaftHistory;
use crate::transport::GrpcTransport;
use crate::watch::Watches;

/// How often the cluster-wide status behind the event stream is refreshed.
const CLUSTER_WATCH_PERIOD: Duration = Duration::from_millis(250);
/// How often the event stream's `stats` events are gathered while a
/// stream listens.
const STATS_PERIOD: Duration = Duration::from_secs(1);
/// How long in-flight requests get to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Why [`run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// `shutdown` resolved.
    Shutdown,
    /// The disk had filled and has room again: start the node afresh (the
    /// raft log replays what the failed engine lost) to recover.
    RestartForSpace,
}

/// A node whose engine and raft peer run and whose API is assembled, but
/// which listens nowhere yet: [`Node::serve`] puts it on a port, and tests
/// can call [`Node::router`] directly.
pub struct Node {
    config: NodeConfig,
    engine: Arc<Engine>,
    /// The first group's peer; the others are in `groups`.
    peer: Peer,
    groups: Arc<Groups>,
    /// Starts the groups split off one this node hosts.
    splits_task: JoinHandle<()>,
    core: Arc<Core>,
    app: Router,
    /// The Redis-protocol front end, and its port when `--resp-listen`
    /// names one.
    resp: Arc<crate::resp::RespServer>,
    resp_listener: Option<TcpListener>,
    /// The memcached front end, and its port when `--memcache-listen`
    /// names one.
    memcache: Arc<crate::memcache::MemcacheServer>,
    memcache_listener: Option<TcpListener>,
    /// The raft service alone, for peers' control-lane connections.
    peer_app: Router,
    /// The threads that carry the raft transport's control lane, both ways.
    peer_net: PeerNet,
    /// With `--tls-cert`: what the port serves with (`crate::tls_net`).
    tls: Option<strata_tls::NodeTls>,
    /// Tells the raft transport's streams and the cluster watch that the
    /// node is stopping.
    stopping: watch::Sender<bool>,
    /// The task keeping the cluster status fresh.
    watcher: JoinHandle<()>,
    /// The task gathering the event stream's stats.
    stats_task: JoinHandle<()>,
    /// The leader's lease clock (`crate::lessor`).
    lessor_task: JoinHandle<()>,
    /// Names the cluster if it has no id yet (`crate::cluster_name`).
    naming_task: JoinHandle<()>,
    balance_task: JoinHandle<()>,
    /// Keeps the gateway's endpoints (`crate::eds`) current.
    eds_task: JoinHandle<()>,
    /// The consistency canary, when `--canary` runs it.
    canary: Option<JoinHandle<()>>,
}

/// Runs a node on `listener` until `shutdown` resolves, or until a node
/// whose disk filled up sees space again (then the caller restarts it).
/// A node that finds it lost its data stops with that as its error.
pub async fn run(
    listener: TcpListener,
    config: NodeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<Stop> {
    Node::start(config).await?.serve(listener, shutdown).await
}

impl Node {
    /// Opens the engine and the raft log under `config.data_dir`, starts the
    /// raft peer and assembles the API.
    pub async fn start(config: NodeConfig) -> anyhow::Result<Node> {
        use anyhow::Context as _;
        let members = config.members().map_err(anyhow::Error::msg)?;
        // Bound first, so that a port in use stops the start before anything
        // else has started.
        let resp_listener = match config.resp_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding --resp-listen {addr}"))?,
            ),
            None => None,
        };
        let memcache_listener = match config.memcache_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding --memcache-listen {addr}"))?,
            ),
            None => None,
        };
        let guard = Arc::new(
            crate::auth::Guard::load(config.auth_jwks.as_deref(), config.anonymous_role)
                .context("loading --auth-jwks")?,
        );
        let own_token = config
            .token_file
            .as_ref()
            .map(|path| {
                std::fs::read_to_string(path)
                    .with_context(|| format!("reading --token-file {}", path.display()))
            })
            .transpose()?;
        let allow_faults = std::env::var(crate::canary::fault::ALLOW_FAULTS_ENV).ok();
        config
            .faults
            .check(allow_faults.as_deref())
            .map_err(anyhow::Error::msg)?;
        create_data_dir(&StdFs, &config.data_dir)
            .with_context(|| format!("creating data dir {}", config.data_dir.display()))?;
        // The raft log is the write-ahead log, so the engine keeps none of its
        // own: applied data lives in the memtable until a flush, every apply
        // batch records its raft index, and the raft log is compacted only up to
        // what a flush made durable. After a crash the raft log replays the rest.
        let engine_opts = EngineOptions {
            wal: WalMode::Disabled,
            ..EngineOptions::default()
        };
        let engine = Arc::new(
            Engine::open(config.engine_dir(), engine_opts).context("opening the storage engine")?,
        );
        // The configured members; once the group has stored its own directory
        // (after any membership change), the stored one takes over at start.
        let directory = Members::new(members.clone());
        let tls = match (&config.tls_cert, &config.tls_key, &config.tls_ca) {
            (Some(cert), Some(key), Some(ca)) => Some(
                strata_tls::NodeTls::load(cert, key, ca)
                    .context("loading --tls-cert/--tls-key/--tls-ca")?,
            ),
            (None, None, None) => None,
            _ => anyhow::bail!("--tls-cert, --tls-key and --tls-ca go together"),
        };
        let channels = Arc::new(
            MemberChannels::new(config.id, directory.clone())
                .with_tls(tls.as_ref().map(|t| t.client.clone())),
        );
        let peer_net = PeerNet::start().context("starting the raft network threads")?;
        let parts = GroupParts {
            config: config.clone(),
            engine: engine.clone(),
            directory,
            channels: channels.clone(),
            control: peer_net.handle(),
        };
        // A joining node bootstraps nothing: it learns the group from a snapshot.
        let bootstrap_voters = if config.join {
            Vec::new()
        } else {
            members.keys().copied().collect()
        };
        let peer = parts
            .start(config.group_id, bootstrap_voters)
            .context("starting the raft peer")?;
        let handle = peer.handle();
        let start_group: StartGroup = Arc::new(move |group| parts.start(group, Vec::new()));
        let groups = Arc::new(Groups::with_start(handle.clone(), start_group));
        groups
            .start_hosted(&engine)
            .context("starting the groups split off the first")?;
        let activity = Arc::new(ActivityLog::default());
        let history = Arc::new(RaftHistory::default());
        crate::event_log::spawn(&handle, &engine, activity.clone(), history.clone())
            .context("starting the event log")?;

        let metrics = Arc::new(NodeMetrics::new(
            engine.clone(),
            handle.clone(),
            config.data_dir.clone(),
        ));
        let core = Arc::new(
            Core::new(
                handle.clone(),
                groups.clone(),
                channels,
                config.limits.clone(),
                config.timing.clone(),
                metrics.api.forwarded.clone(),
            )
            .with_stale_reads_fault(config.faults.stale_reads)
            .with_own_token(own_token.as_deref())?,
        );
        if config.faults.stale_reads {
            tracing::warn!("TEST-ONLY FAULT: linearizable reads skip the ReadIndex round");
        }
        let canary_state = Arc::new(CanaryState::new(config.canary.enabled));
        let canary_metrics = metrics.canary.clone();
        let (stopping, stopping_rx) = watch::channel(false);
        let splits_task =
            crate::groups::follow_splits(groups.clone(), engine.clone(), stopping.subscribe());
        let (cluster, watcher) =
            spawn_watch(core.clone(), CLUSTER_WATCH_PERIOD, stopping.subscribe());
        let stats = Arc::new(
            StatsSource::new(
                config.id,
                metrics.clone(),
                activity,
                history,
                engine.clone(),
            )
            .with_gateway_admin(config.gateway_admin.clone())
            .with_slow_requests(SlowRequests::new(
                Duration::from_millis(config.slow_request_ms),
                config.trace_link.clone(),
            )),
        );
        let (stats_feed, stats_task) = crate::stats::feed::spawn(
            core.clone(),
            stats.clone(),
            STATS_PERIOD,
            stopping.subscribe(),
        );
        let lessor_task = crate::lessor::spawn(
            core.lessor().clone(),
            core.request_timeout(),
            stopping.subscribe(),
        );
        let naming_task = crate::cluster_name::spawn(
            core.peer().clone(),
            core.request_timeout(),
            stopping.subscribe(),
        );
        let balance_task = crate::balance::spawn(
            core.clone(),
            Duration::from_millis(config.balance_every_ms),
            stopping.subscribe(),
        );
        let watches = Arc::new(Watches::new(
            config.id,
            crate::watch::ranges_of(groups.clone()),
            stopping.subscribe(),
        ));
        let state = AppState {
            core: core.clone(),
            watches,
            cluster,
            metrics,
            canary: canary_state.clone(),
            stats,
            stats_feed,
        };
        let raft = RaftService::new(config.id, groups.clone(), stopping_rx)
            .with_max_snapshot_bytes(config.max_snapshot_mb << 20);
        let peer_app = crate::app::peer_router(raft.clone());
        let (endpoints, eds_task) =
            crate::eds::source::spawn(core.clone(), stopping.subscribe()).await;
        let eds = crate::eds::EdsService::new(endpoints, stopping.subscribe());
        let budget = crate::app::write_budget(&core);
        let resp = crate::resp::RespServer::new(
            core.clone(),
            guard.clone(),
            budget.clone(),
            std::time::Duration::from_millis(config.resp_frame_timeout_ms),
            config.resp_max_connections,
            tls.as_ref().map(|t| crate::tls_net::acceptor(&t.server)),
        );
        let memcache = crate::memcache::MemcacheServer::new(
            core.clone(),
            guard.clone(),
            budget.clone(),
            std::time::Duration::from_millis(config.memcache_frame_timeout_ms),
            config.memcache_max_connections,
            tls.as_ref().map(|t| crate::tls_net::acceptor(&t.server)),
        );
        let app = crate::app::router(
            state,
            raft,
            eds,
            config.console_dir.as_deref(),
            guard,
            budget,
        )
        .await?;
        // Started last, so that a node that failed to start leaves no canary
        // running.
        let canary = config.canary.enabled.then(|| {
            crate::canary::spawn(
                core.clone(),
                config.canary.clone(),
                canary_metrics,
                canary_state,
            )
        });
        Ok(Node {
            config,
            engine,
            peer,
            groups,
            splits_task,
            core,
            app,
            resp,
            resp_listener,
            memcache,
            memcache_listener,
            peer_app,
            peer_net,
            tls,
            stopping,
            watcher,
            stats_task,
            lessor_task,
            naming_task,
            balance_task,
            eds_task,
            canary,
        })
    }

    /// The whole API (REST, gRPC, raft transport) as one service.
    pub fn router(&self) -> Router {
        self.app.clone()
    }

    /// The raft peer's handle (its status, events and proposals).
    pub fn raft(&self) -> strata_raft::PeerHandle {
        self.core.peer().clone()
    }

    /// The ids of the raft groups this node hosts, ascending.
    pub fn groups(&self) -> Vec<u64> {
        self.groups.ids()
    }

    /// The handle of group `group`'s peer, if this node hosts it.
    pub fn group(&self, group: u64) -> Option<strata_raft::PeerHandle> {
        self.groups.get(group)
    }

    /// Refuses new requests from now on (503, certainly not applied) and
    /// reports the node not ready: the first step of a graceful stop, which
    /// [`serve`](Self::serve) takes itself on shutdown.
    pub fn drain(&self) {
        self.core.peer().drain();
    }

    /// Serves the API on `listener` until `shutdown` resolves, until a
    /// node whose disk filled up sees space again, or until it finds it
    /// lost its data (an error); then stops the node.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<Stop> {
        let Node {
            config,
            engine,
            peer,
            groups,
            splits_task,
            core,
            app,
            resp,
            resp_listener,
            memcache,
            memcache_listener,
            peer_app,
            peer_net,
            tls,
            stopping,
            watcher,
            stats_task,
            lessor_task,
            naming_task,
            balance_task,
            eds_task,
            canary,
        } = self;
        tracing::info!(id = config.id, listen = %listener.local_addr()?, "node serving");
        let resp_task = resp_listener.map(|listener| {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!(id = config.id, resp_listen = %addr, "RESP serving");
            }
            tokio::spawn(crate::resp::serve(listener, resp, stopping.subscribe()))
        });
        let memcache_task = memcache_listener.map(|listener| {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!(id = config.id, memcache_listen = %addr, "memcached serving");
            }
            tokio::spawn(crate::memcache::serve(
                listener,
                memcache,
                stopping.subscribe(),
            ))
        });
        let joining = config
            .join
            .then(|| tokio::spawn(crate::join::join(core.clone(), config.advertise_address())));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        // One port: raft peers' control-lane connections are served on the
        // raft network threads, everything else by the API on this runtime.
        let Split {
            api,
            peers,
            accepting,
        } = crate::peer_net::split(
            listener,
            &peer_net.handle(),
            tls.as_ref().map(|t| &t.server),
        )?;
        let mut peers_stopping = stopping.subscribe();
        peer_net.handle().spawn(async move {
            let stopped = async move {
                let _ = peers_stopping.wait_for(|stop| *stop).await;
            };
            if let Err(e) = axum::serve(peers, peer_app)
                .with_graceful_shutdown(stopped)
                .await
            {
                tracing::warn!(error = %e, "serving raft peers failed");
            }
        });
        let server = axum::serve(api, app).with_graceful_shutdown(async move {
            let _ = stop_rx.await;
        });
        let mut server = tokio::spawn(async move { server.await });
        let stop = tokio::select! {
            _ = shutdown => Ok(Stop::Shutdown),
            _ = crate::space::space_after_full(
                core.clone(),
                config.data_dir.clone(),
                config.resume_free_mb << 20,
            ), if config.resume_free_mb > 0 => Ok(Stop::RestartForSpace),
            lost = crate::lost_state::lost_state(core.peer().clone()) => Err(lost),
        };
        let why = stop.as_ref().map_err(|lost| lost.kind);
        tracing::info!(id = config.id, stop = ?why, "shutting down");
        // The canary holds no state worth finishing: its last window is
        // simply not checked.
        if let Some(canary) = canary {
            canary.abort();
            let _ = canary.await;
        }
        // While everything still runs (the raft transport above all, which
        // the requests in flight need), refuse new requests, let those in
        // flight finish and hand leadership over. A member that lost its
        // state has stopped its raft peer already: nothing to drain.
        if stop.is_ok() {
            crate::shutdown::drain_and_hand_over(&core.groups().all(), &config.timing).await;
        }
        tracing::info!(
            grace_ms = SHUTDOWN_GRACE.as_millis() as u64,
            "shutdown: closing the API and the raft transport"
        );
        let _ = stop_tx.send(());
        let _ = stopping.send(true);
        // Requests in flight get a grace period; whatever is left after it
        // is dropped. Then nothing but this function holds the node, so the
        // engine is closed (and its directory free) when it returns.
        if tokio::time::timeout(SHUTDOWN_GRACE, &mut server)
            .await
            .is_err()
        {
            tracing::warn!(
                "shutdown: requests still in flight after the grace period; dropping them"
            );
            server.abort();
            let _ = server.await;
        }
        if let Some(resp_task) = resp_task {
            let _ = resp_task.await;
        }
        if let Some(memcache_task) = memcache_task {
            let _ = memcache_task.await;
        }
        let _ = watcher.await;
        let _ = stats_task.await;
        let _ = lessor_task.await;
        let _ = naming_task.await;
        let _ = balance_task.await;
        let _ = eds_task.await;
        let _ = splits_task.await;
        if let Some(joining) = joining {
            joining.abort();
            let _ = joining.await;
        }
        drop(core);
        // Its waiters are answered as the driver stops: "not applied" for
        // what never reached raft, "outcome unknown" for what did.
        drop(peer);
        groups.stop();
        tracing::info!("shutdown: raft peers stopped");
        accepting.abort();
        let _ = accepting.await;
        drop(peer_net);
        // A clean stop flushes, so the next start need not replay the log.
        if let Err(e) = engine.flush() {
            tracing::warn!(error = %e, "final flush failed; the raft log will be replayed at start");
        }
        tracing::info!("shutdown: stopped");
        Ok(stop?)
    }
}

/// What the peer of every group this node hosts is made of.
struct GroupParts {
    config: NodeConfig,
    engine: Arc<Engine>,
    /// The members' addresses, the same for every group.
    directory: Members,
    channels: Arc<MemberChannels>,
    /// The raft transport's control lane runtime.
    control: tokio::runtime::Handle,
}

impl GroupParts {
    /// Starts the peer of group `group` on its own raft log and snapshot
    /// directories, with its own transport. Must run inside the request
    /// runtime, which runs the transport's bulk lane.
    fn start(&self, group: u64, bootstrap_voters: Vec<u64>) -> anyhow::Result<Peer> {
        use anyhow::Context as _;
        let config = &self.config;
        let state_machine = Arc::new(
            StateMachine::new(self.engine.clone(), group).with_history(config.watch_history),
        );
        let slot = Arc::new(OnceLock::new());
        let transport = GrpcTransport::new(
            self.channels.clone(),
            group,
            slot.clone(),
            self.control.clone(),
        );
        let mut peer_config = PeerConfig::new(
            config.id,
            group,
            bootstrap_voters,
            config.raft_log_dir_of(group),
        );
        peer_config.members = self.directory.clone();
        peer_config.read_mode = match config.timing.read_mode {
            crate::config::ReadMode::Safe => strata_raft::ReadMode::Safe,
            crate::config::ReadMode::Lease => strata_raft::ReadMode::Lease,
        };
        peer_config.tick = Duration::from_millis(config.timing.tick_ms);
        peer_config.election_ticks = config.timing.election_ticks;
        peer_config.heartbeat_ticks = config.timing.heartbeat_ticks;
        peer_config.snapshot_root = config.snapshot_dir_of(group);
        peer_config.compact_log_entries = config.compact_log_entries;
        peer_config.compact_keep_entries = config.compact_keep_entries;
        peer_config.compact_log_bytes = config.compact_log_mb << 20;
        let peer = Peer::start(peer_config, state_machine, transport)
            .with_context(|| format!("starting the peer of raft group {group}"))?;
        let _ = slot.set(peer.handle());
        Ok(peer)
    }
}

/// Creates the node's data directory on a first boot. Its entry in its
/// parent must be synced: a crash that lost it would take the engine and
/// the raft log, and everything they synced inside it, along.
fn create_data_dir(fs: &dyn FileSystem, dir: &std::path::Path) -> std::io::Result<()> {
    fs.create_dir_durable(dir)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use strata_engine::FaultFs;
    use strata_raft::log::RaftLogStore;

    use super::*;

    // Proves that the directories a first boot creates (the data
    // directory, the engine's and the raft log's inside it) survive a crash
    // that keeps only what was synced, directory entries included.
    #[test]
    fn directories_created_at_first_boot_survive_a_crash() {
        let fs = FaultFs::new();
        let data = Path::new("/srv/strata/node1");
        create_data_dir(&fs, data).expect("data dir");
        let engine = Engine::open_with_fs(
            Arc::new(fs.clone()),
            &data.join("engine"),
            EngineOptions::default(),
        )
        .expect("engine opens");
        let log = RaftLogStore::open(Arc::new(fs.clone()), &data.join("raft-1"), 1 << 20, &[1])
            .expect("raft log opens");
        let after = fs.crash();
        drop((engine, log));
        for dir in [data.to_path_buf(), data.join("engine"), data.join("raft-1")] {
            assert!(
                after.exists(&dir).expect("exists"),
                "{} was lost at the crash",
                dir.display()
            );
        }
    }
}
