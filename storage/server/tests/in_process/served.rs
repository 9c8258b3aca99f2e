//! A one-voter node served on 127.0.0.1 with its protocol listeners (RESP
//! and memcached) beside its API, for the tests of those front ends.

use std::net::SocketAddr;
use std::time::Duration;

use strata_auth::{KeyPair, Role};
use strata_server::NodeConfig;
use strata_server::config::Limits;
use tempfile::TempDir;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// The node, stopped when dropped.
pub struct ServedNode {
    pub resp: SocketAddr,
    pub memcache: SocketAddr,
    pub http: SocketAddr,
    keys: KeyPair,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<strata_server::Stop>>,
    _dir: TempDir,
}

impl ServedNode {
    /// `anonymous`: what a connection without a token may do. Requests on
    /// the protocol ports must arrive whole within a second.
    pub async fn start(anonymous: &str, limits: Limits) -> ServedNode {
        Self::start_configured(anonymous, limits, |_| {}).await
    }

    /// As `start`, with `configure` having the last word on the config.
    pub async fn start_configured(
        anonymous: &str,
        limits: Limits,
        configure: impl FnOnce(&mut NodeConfig),
    ) -> ServedNode {
        let dir = tempfile::tempdir().unwrap();
        let keys = KeyPair::generate();
        let jwks = dir.path().join("jwks.json");
        std::fs::write(&jwks, keys.jwks_json()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http = listener.local_addr().unwrap();
        let resp = free_port().await;
        let memcache = free_port().await;
        let mut config = NodeConfig::single(1, http, dir.path().join("data"));
        config.resp_listen = Some(resp);
        config.memcache_listen = Some(memcache);
        config.auth_jwks = Some(jwks);
        config.anonymous_role = anonymous.parse().unwrap();
        config.limits = limits;
        config.resp_frame_timeout_ms = 1000;
        config.memcache_frame_timeout_ms = 1000;
        configure(&mut config);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(strata_server::run(listener, config, async move {
            let _ = stopped.await;
        }));
        let node = ServedNode {
            resp,
            memcache,
            http,
            keys,
            stop: Some(stop),
            task,
            _dir: dir,
        };
        node.wait_leader().await;
        node
    }

    /// Stops the node and waits until it has stopped.
    pub async fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), &mut self.task)
            .await
            .expect("the node stops within 30 s")
            .unwrap()
            .expect("a clean stop");
    }

    async fn wait_leader(&self) {
        let http = reqwest::Client::new();
        for _ in 0..500 {
            if let Ok(r) = http
                .get(format!("http://{}/health/leader", self.http))
                .send()
                .await
                && r.status() == reqwest::StatusCode::OK
                && TcpStream::connect(self.resp).await.is_ok()
                && TcpStream::connect(self.memcache).await.is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the node did not lead and serve its protocol ports within 5 s");
    }

    /// A token of `role` the node takes.
    pub fn token(&self, role: Role) -> String {
        self.keys
            .signer()
            .sign("protocols", role, Duration::from_secs(3600))
            .unwrap()
    }

    /// The key's value read over REST, the other front end.
    pub async fn rest_get(&self, key: &str) -> Option<String> {
        let r = reqwest::get(format!("http://{}/v1/kv/{key}", self.http))
            .await
            .unwrap();
        match r.status() {
            reqwest::StatusCode::NOT_FOUND => None,
            s => {
                assert!(s.is_success(), "{s}");
                Some(r.text().await.unwrap())
            }
        }
    }
}

async fn free_port() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap()
}
