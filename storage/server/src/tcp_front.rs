//! What the front ends on ports of their own (the Redis protocol,
//! `crate::resp`, and the memcached text protocol, `crate::memcache`)
//! share: an accept loop that ends every connection when the node stops,
//! and how a connection waits for its next request.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::codec::{Decoder, Framed};

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
/// `connection` for each, at most `cap.max_connections` at once (one more
/// is sent `cap.refusal` and closed, as Redis and memcached do); then ends
/// every connection (those idle at once, the others after the request they
/// are running) and returns once all have ended, so that nothing of the
/// node is left in use. `protocol` names the front end in the log;
/// `connections` counts what happens.
pub async fn serve<F, Fut>(
    listener: TcpListener,
    protocol: &'static str,
    cap: Cap,
    connections: Arc<Connections>,
    stopping: watch::Receiver<bool>,
    connection: F,
) where
    F: Fn(TcpStream, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut stop = stopping.clone();
    let mut running = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if connections.open() >= cap.max_connections as u64 => {
                    connections.refused.fetch_add(1, Ordering::Relaxed);
                    // A fresh socket's send buffer is empty: the refusal
                    // goes out without waiting, and the socket closes.
                    let _ = stream.try_write(cap.refusal);
                }
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    connections.open.fetch_add(1, Ordering::Relaxed);
                    connections.taken.fetch_add(1, Ordering::Relaxed);
                    let open = OpenConnection(connections.clone());
                    let serve = connection(stream, stopping.clone());
                    running.spawn(async move {
                        serve.await;
                        drop(open);
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

/// Waits for the next request on `framed`. An idle connection waits as
/// long as it likes; once a request's first byte is in, the whole request
/// has `frame_timeout` to arrive (a client trickling a request holds its
/// buffer that long at most).
pub async fn next_request<C>(
    framed: &mut Framed<TcpStream, C>,
    frame_timeout: Duration,
    stopping: &mut watch::Receiver<bool>,
) -> Next<C::Item, C::Error>
where
    C: Decoder,
    C::Error: ConnectionError,
{
    if framed.read_buffer().is_empty() {
        // Peek, not `readable()`: readiness may be reported with no byte
        // to read, and an idle connection must not be timed as a request.
        let mut first = [0u8; 1];
        tokio::select! {
            peeked = framed.get_ref().peek(&mut first) => match peeked {
                Ok(0) | Err(_) => return Next::Ended,
                Ok(_) => {}
            },
            () = stopped(stopping) => return Next::Ended,
        }
    }
    let next = tokio::select! {
        next = tokio::time::timeout(frame_timeout, framed.next()) => next,
        () = stopped(stopping) => return Next::Ended,
    };
    match next {
        Err(_) => Next::Late,
        Ok(None) => Next::Ended,
        Ok(Some(Err(e))) if e.is_io() => Next::Ended,
        Ok(Some(Err(e))) => Next::Refused(e),
        Ok(Some(Ok(request))) => Next::Request(request),
    }
}
