//! The raft transport's control lane on threads of its own.
//!
//! Heartbeats, their answers, votes and ReadIndex keep a leader in office;
//! on the node's request runtime they waited behind whatever the workers
//! were doing (reading, decoding and answering 15 MiB requests), long
//! enough for followers to start elections against a leader that was alive.
//! So the control lane runs on a runtime of its own at both ends:
//!
//! - the sending side: [`peer_channel`] connects with [`PEER_PREFACE`]
//!   written first, and the transport runs the lane's task on [`PeerNet`];
//! - the receiving side: [`split`] reads the first bytes of every accepted
//!   connection on the node's one port, and hands the connections that start
//!   with the preface to a server of the raft service alone, which runs on
//!   [`PeerNet`]; every other connection (HTTP/1.1, HTTP/2, gRPC) goes to
//!   the API as before.
//!
//! The port stays one: peers, proxies and firewalls see no change, and a
//! peer that connects without the preface is still served by the API's
//! router, which keeps the raft service too.
//!
//! With TLS (`crate::tls_net`) the preface is still written in the clear
//! and TLS starts after it, on both sides.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use strata_tls::rustls::{ClientConfig, ServerConfig};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;
use tokio_util::either::Either;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::tls_net;

/// What a raft peer writes before HTTP/2 on a control-lane connection. No
/// HTTP/1.1 request line and no HTTP/2 connection preface starts this way.
pub const PEER_PREFACE: &[u8] = b"STRATA-PEER/1\r\n\r\n";

/// How long an accepted connection may take to show whether it is a peer's
/// before it is handed to the API anyway.
const CLASSIFY_TIMEOUT: Duration = Duration::from_secs(5);
/// Between two looks at a connection that has sent part of the preface.
const CLASSIFY_POLL: Duration = Duration::from_millis(1);
/// Accepted connections waiting to be served, per side.
const BACKLOG: usize = 256;
/// Threads of the control lane's runtime: the lane carries small messages
/// only (appends and snapshots stay on the request runtime).
const THREADS: usize = 1;

/// The control lane's runtime. Dropping it stops its tasks without waiting
/// (it may be dropped inside another runtime).
pub struct PeerNet {
    runtime: Option<Runtime>,
}

impl PeerNet {
    pub fn start() -> io::Result<PeerNet> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(THREADS)
            .thread_name("raft-net")
            .enable_all()
            .build()?;
        Ok(PeerNet {
            runtime: Some(runtime),
        })
    }

    pub fn handle(&self) -> Handle {
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as PeerNet")
            .handle()
            .clone()
    }
}

impl Drop for PeerNet {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A lazily connecting channel to a member's port whose connections start
/// with [`PEER_PREFACE`]. Its connections are driven by the runtime it is
/// made in: make it inside [`PeerNet`]. With `tls`, TLS starts after the
/// preface.
pub fn peer_channel(address: &str, tls: Option<Arc<ClientConfig>>) -> Option<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .ok()?
        .connect_timeout(Duration::from_millis(250))
        .http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(2))
        .keep_alive_while_idle(true);
    let connector =
        tower::service_fn(move |uri: Uri| tls_net::connect(uri, PEER_PREFACE, tls.clone()));
    Some(endpoint.connect_with_connector_lazy(connector))
}

/// The connections of one side of a [`split`] port, as a listener for
/// `axum::serve`. Each connection is handed over unregistered and joins the
/// runtime of the server that accepts it. With TLS, each handshake runs as
/// a task of its own there, and a connection is handed to the server once
/// its handshake is done; one that fails (no certificate, or one the
/// cluster's CA did not issue) is closed and never served.
pub struct Accepted {
    connections: mpsc::Receiver<(std::net::TcpStream, SocketAddr)>,
    local: SocketAddr,
    tls: Option<TlsAcceptor>,
    handshakes: JoinSet<io::Result<(tls_net::Accepted, SocketAddr)>>,
    closed: bool,
}

impl Accepted {
    fn new(
        connections: mpsc::Receiver<(std::net::TcpStream, SocketAddr)>,
        local: SocketAddr,
        tls: Option<&Arc<ServerConfig>>,
    ) -> Self {
        Accepted {
            connections,
            local,
            tls: tls.map(tls_net::acceptor),
            handshakes: JoinSet::new(),
            closed: false,
        }
    }
}

impl axum::serve::Listener for Accepted {
    type Io = tls_net::Accepted;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (tls_net::Accepted, SocketAddr) {
        loop {
            tokio::select! {
                next = self.connections.recv(), if !self.closed => {
                    let Some((tcp, from)) = next else {
                        // The accepting task ended (the node is stopping):
                        // nothing more will come, and the server's graceful
                        // shutdown ends its loop.
                        self.closed = true;
                        continue;
                    };
                    let tcp = match TcpStream::from_std(tcp) {
                        Ok(tcp) => tcp,
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot serve an accepted connection");
                            continue;
                        }
                    };
                    match &self.tls {
                        None => return (Either::Left(tcp), from),
                        Some(acceptor) => {
                            self.handshakes.spawn(tls_net::accept(acceptor.clone(), tcp, from));
                        }
                    }
                }
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    match done {
                        Ok(Ok(accepted)) => return accepted,
                        Ok(Err(e)) => tracing::warn!(error = %e, "refused a connection: TLS handshake failed"),
                        Err(e) => tracing::warn!(error = %e, "a TLS handshake task failed"),
                    }
                }
                else => return std::future::pending().await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// The two sides of one port and the task accepting on it; aborting the
/// task closes the port.
pub struct Split {
    pub api: Accepted,
    pub peers: Accepted,
    pub accepting: JoinHandle<()>,
}

/// Accepts on `listener`, on the runtime `on` (the raft network threads, so
/// that a peer's new connection is taken while the request runtime is
/// busy), and sorts every connection by its first bytes: those that start
/// with [`PEER_PREFACE`] (consumed) to `peers`, all others, untouched, to
/// `api`. Every connection gets `TCP_NODELAY`. With `tls`, both sides
/// serve only connections that complete a TLS handshake with it.
pub fn split(
    listener: TcpListener,
    on: &Handle,
    tls: Option<&Arc<ServerConfig>>,
) -> io::Result<Split> {
    let local = listener.local_addr()?;
    let listener = listener.into_std()?;
    let (api_tx, api_rx) = mpsc::channel(BACKLOG);
    let (peer_tx, peer_rx) = mpsc::channel(BACKLOG);
    let accepting = on.spawn(async move {
        let listener = match TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                tracing::error!(error = %e, "cannot accept connections");
                return;
            }
        };
        loop {
            let (tcp, from) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors and the like: wait rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!(error = %e, "cannot set TCP_NODELAY");
            }
            let (api_tx, peer_tx) = (api_tx.clone(), peer_tx.clone());
            tokio::spawn(async move {
                let mut tcp = tcp;
                let peer = match tokio::time::timeout(CLASSIFY_TIMEOUT, is_peer(&tcp)).await {
                    Ok(Ok(peer)) => peer,
                    // Silent for too long: the API's server decides.
                    Err(_) => false,
                    // The connection failed before it said anything.
                    Ok(Err(_)) => return,
                };
                if peer {
                    let mut preface = [0u8; PEER_PREFACE.len()];
                    if tcp.read_exact(&mut preface).await.is_err() {
                        return;
                    }
                }
                let Ok(tcp) = tcp.into_std() else { return };
                let side = if peer { &peer_tx } else { &api_tx };
                let _ = side.send((tcp, from)).await;
            });
        }
    });
    Ok(Split {
        api: Accepted::new(api_rx, local, tls),
        peers: Accepted::new(peer_rx, local, tls),
        accepting,
    })
}

/// Whether `tcp` starts with [`PEER_PREFACE`], looking without taking: as
/// soon as a byte differs the answer is no, and the API reads the request
/// from its start.
async fn is_peer(tcp: &TcpStream) -> io::Result<bool> {
    let mut seen = [0u8; PEER_PREFACE.len()];
    loop {
        let n = tcp.peek(&mut seen).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if seen[..n] != PEER_PREFACE[..n] {
            return Ok(false);
        }
        if n == PEER_PREFACE.len() {
            return Ok(true);
        }
        // A prefix of the preface: the rest is on its way (the sender
        // writes it whole, so this is rare).
        tokio::time::sleep(CLASSIFY_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::routing::get;
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// Serves `split`'s two sides with a route that names the side.
    async fn serve_both_sides() -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let Split {
            api,
            peers,
            accepting,
        } = split(listener, &Handle::current(), None).unwrap();
        let named = |name: &'static str| Router::new().route("/", get(move || async move { name }));
        tokio::spawn(async move { axum::serve(api, named("api")).await });
        tokio::spawn(async move { axum::serve(peers, named("peer")).await });
        (address, accepting)
    }

    /// Writes `pieces` with a pause between them, then reads the answer.
    async fn exchange(address: SocketAddr, pieces: &[&[u8]]) -> String {
        let mut tcp = TcpStream::connect(address).await.unwrap();
        for piece in pieces {
            tcp.write_all(piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), tcp.read_to_string(&mut answer))
            .await
            .expect("an answer, and the connection closed, within 10 s")
            .unwrap();
        answer
    }

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n";

    #[tokio::test]
    async fn connections_go_to_the_side_their_first_bytes_name() {
        // Proves: a request without the preface reaches the API whole; one
        // after the preface reaches the peers' server with the preface
        // taken off, also when the preface arrives in pieces; a request
        // that starts like the preface but differs goes to the API intact.
        let (address, _accepting) = serve_both_sides().await;
        let body = |answer: String| answer.rsplit("\r\n\r\n").next().unwrap().to_string();
        assert_eq!(body(exchange(address, &[REQUEST]).await), "api");
        assert_eq!(
            body(exchange(address, &[PEER_PREFACE, REQUEST]).await),
            "peer"
        );
        let (head, tail) = PEER_PREFACE.split_at(5);
        assert_eq!(
            body(exchange(address, &[head, tail, REQUEST]).await),
            "peer"
        );
        let answer = exchange(
            address,
            &[
                b"STRAT",
                b"UM / HTTP/1.1\r\nHost: n\r\nConnection: close\r\n\r\n",
            ],
        )
        .await;
        assert!(
            answer.starts_with("HTTP/1.1 400") || answer.starts_with("HTTP/1.1 405"),
            "an unknown method reached the API as sent: {answer:?}"
        );
    }

    #[tokio::test]
    async fn aborting_the_accepting_task_closes_the_port() {
        // Proves: the port is free once the node stops accepting (a node
        // restarted in the same process binds it again).
        let (address, accepting) = serve_both_sides().await;
        accepting.abort();
        let _ = accepting.await;
        TcpListener::bind(address)
            .await
            .expect("the port is free again");
    }
}
