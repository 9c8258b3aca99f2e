//! What the front ends on ports of their own (the Redis protocol,
//! `crate::resp`, and the memcached text protocol, `crate::memcache`)
//! share: an accept loop that caps the connections, takes them over TLS
//! when the node has a certificate, and ends every one when the node
//! stops; and how a connection reads its requests, each timed from its
//! first byte (`clocked`).

mod clocked;
pub mod write;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::codec::{Decoder, Encoder, Framed};
use tokio_util::either::Either;

use crate::tls_net::{self, Accepted};
use clocked::Clocked;

/// A front end's connections: those open now, all taken since the node
/// started, and those refused for being over the cap.
#[derive(Debug, Default)]
pub struct Connections {
    open: AtomicU64,
    taken: AtomicU64,
    refused: AtomicU64,
}

impl Connections {
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Counts a connection open while it lives.
struct OpenConnection(Arc<Connections>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many connections a front end holds at once, and what one past that
/// is told before it is closed (in the protocol's own words).
#[derive(Debug, Clone, Copy)]
pub struct Cap {
    pub max_connections: usize,
    pub refusal: &'static [u8],
}

/// Accepts connections on `listener` until `stopping` turns true, running
/// `connection` for each, over TLS when `tls` is given (a client without a
/// certificate of the cluster fails its handshake), at most
/// `cap.max_connections` at once (one more is sent `cap.refusal` and
/// closed, as Redis and memcached do); then ends every connection (those
/// idle at once, the others after the request they are running) and
/// returns once all have ended, so that nothing of the node is left in
/// use. `protocol` names the front end in the log; `connections` counts
/// what happens.
pub async fn serve<F, Fut>(
    listener: TcpListener,
    protocol: &'static str,
    tls: Option<TlsAcceptor>,
    cap: Cap,
    connections: Arc<Connections>,
    stopping: watch::Receiver<bool>,
    connection: F,
) where
    F: Fn(Accepted, watch::Receiver<bool>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let connection = Arc::new(connection);
    let mut stop = stopping.clone();
    let mut running = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) if connections.open() >= cap.max_connections as u64 => {
                    connections.refused.fetch_add(1, Ordering::Relaxed);
                    // A fresh socket's send buffer is empty: the refusal
                    // goes out without waiting, and the socket closes. A
                    // TLS client is closed without one.
                    if tls.is_none() {
                        let _ = tcp.try_write(cap.refusal);
                    }
                }
                Ok((tcp, from)) => {
                    let _ = tcp.set_nodelay(true);
                    connections.open.fetch_add(1, Ordering::Relaxed);
                    connections.taken.fetch_add(1, Ordering::Relaxed);
                    let open = OpenConnection(connections.clone());
                    let (tls, connection, mut stopping) =
                        (tls.clone(), connection.clone(), stopping.clone());
                    running.spawn(async move {
                        let _open = open;
                        let stream = match tls {
                            None => Either::Left(tcp),
                            // A handshake in progress does not hold up a
                            // stopping node.
                            Some(acceptor) => tokio::select! {
                                handshake = tls_net::accept(acceptor, tcp, from) => match handshake {
                                    Ok((stream, _)) => stream,
                                    Err(e) => {
                                        tracing::debug!(error = %e, protocol, %from, "TLS handshake failed");
                                        return;
                                    }
                                },
                                () = stopped(&mut stopping) => return,
                            },
                        };
                        connection(stream, stopping).await;
                    });
                }
                Err(e) => {
                    // Out of descriptors, say: try again shortly.
                    tracing::warn!(error = %e, protocol, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            // Reap the connections that ended.
            Some(_) = running.join_next(), if !running.is_empty() => {}
            () = stopped(&mut stop) => break,
        }
    }
    drop(listener);
    while running.join_next().await.is_some() {}
}

/// Resolves once the node is stopping.
pub async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

/// A decoder's error that may be the connection's own failure (the peer
/// went away), after which nothing can be said to the client.
pub trait ConnectionError {
    fn is_io(&self) -> bool;
}

/// What waiting for a connection's next request gave.
pub enum Next<T, E> {
    Request(T),
    /// The client closed the connection, or it failed, or the node is
    /// stopping: end the connection without a word.
    Ended,
    /// A request began but was not whole within the time allowed.
    Late,
    /// The input cannot be read on from here: say why and close.
    Refused(E),
}

/// A connection's requests, decoded by `C`: an idle connection waits as
/// long as it likes; once a request's first byte is in, the whole request
/// has `frame_timeout` to arrive (a client trickling a request holds its
/// buffer that long at most).
pub struct Requests<C> {
    framed: Framed<Clocked<Accepted>, C>,
    started: watch::Receiver<Option<Instant>>,
    frame_timeout: Duration,
}

impl<C> Requests<C>
where
    C: Decoder,
    C::Error: ConnectionError,
{
    pub fn new(stream: Accepted, codec: C, frame_timeout: Duration) -> Self {
        let clocked = Clocked::new(stream);
        let started = clocked.started();
        Requests {
            framed: Framed::new(clocked, codec),
            started,
            frame_timeout,
        }
    }

    /// Waits for the next request.
    pub async fn next(&mut self, stopping: &mut watch::Receiver<bool>) -> Next<C::Item, C::Error> {
        // Bytes of the next request already read (pipelined) start its
        // clock now; else its first byte will.
        let pending = !self.framed.read_buffer().is_empty();
        self.framed.get_ref().reset(pending);
        let mut started = self.started.clone();
        let frame_timeout = self.frame_timeout;
        let late = async move {
            let at = started
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|at| *at);
            match at {
                Some(at) => tokio::time::sleep_until(at + frame_timeout).await,
                // The clock is gone with the stream: nothing to time.
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            next = self.framed.next() => match next {
                None => Next::Ended,
                Some(Err(e)) if e.is_io() => Next::Ended,
                Some(Err(e)) => Next::Refused(e),
                Some(Ok(request)) => Next::Request(request),
            },
            () = late => Next::Late,
            () = stopped(stopping) => Next::Ended,
        }
    }

    /// Writes `reply`; an error means the connection is gone.
    pub async fn send<I>(&mut self, reply: I) -> Result<(), <C as Decoder>::Error>
    where
        C: Encoder<I, Error = <C as Decoder>::Error>,
    {
        self.framed.send(reply).await
    }
}
