//! The memcached text protocol on a port of its own (`--memcache-listen`),
//! so that memcached clients and tools work unchanged: `get`, `gets`,
//! `set`, `add`, `replace`, `cas`, `append`, `prepend`, `delete`, `incr`,
//! `decr`, `touch`, `stats`, `version`, `verbosity`, `quit`. Every request
//! goes to the same service core as REST and gRPC: reads are
//! linearizable, a write is answered once a quorum has it on disk, a
//! follower forwards a write to the leader. What each command means here
//! is in `session`; docs/memcached.md has it for users.
//!
//! Requests on one connection run one after the other, in order, each
//! reply written before the next request runs (pipelined requests wait in
//! the connection's buffer meanwhile).

mod codec;
mod counters;
mod session;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::admission::WriteBudget;
use crate::auth::Guard;
use crate::core::Core;
use crate::tcp_front::{self, Cap, Next, Requests as FramedRequests};
use crate::tls_net::Accepted;
use codec::Requests;
use counters::Counters;
use session::Session;
use tokio_rustls::TlsAcceptor;

/// What each memcached connection serves with.
pub struct MemcacheServer {
    core: Arc<Core>,
    guard: Arc<Guard>,
    budget: Arc<WriteBudget>,
    counters: Arc<Counters>,
    /// How long a request may take to arrive, from its first byte.
    frame_timeout: Duration,
    max_connections: usize,
    /// The node's TLS, when it has a certificate: clients need one too.
    tls: Option<TlsAcceptor>,
}

impl MemcacheServer {
    pub fn new(
        core: Arc<Core>,
        guard: Arc<Guard>,
        budget: Arc<WriteBudget>,
        frame_timeout: Duration,
        max_connections: usize,
        tls: Option<TlsAcceptor>,
    ) -> Arc<Self> {
        Arc::new(MemcacheServer {
            core,
            guard,
            budget,
            counters: Arc::new(Counters::default()),
            frame_timeout,
            max_connections,
            tls,
        })
    }
}

/// Accepts memcached connections on `listener` until `stopping` turns
/// true (`crate::tcp_front::serve`).
pub async fn serve(
    listener: TcpListener,
    server: Arc<MemcacheServer>,
    stopping: watch::Receiver<bool>,
) {
    let cap = Cap {
        max_connections: server.max_connections,
        // memcached's own words.
        refusal: b"SERVER_ERROR Too many open connections\r\n",
    };
    let connections = server.counters.connections.clone();
    tcp_front::serve(
        listener,
        "memcached",
        server.tls.clone(),
        cap,
        connections,
        stopping,
        move |stream, stopping| connection(stream, server.clone(), stopping),
    )
    .await;
}

async fn connection(
    stream: Accepted,
    server: Arc<MemcacheServer>,
    mut stopping: watch::Receiver<bool>,
) {
    let max_value_bytes = server.core.limits().max_value_bytes;
    let mut framed =
        FramedRequests::new(stream, Requests::new(max_value_bytes), server.frame_timeout);
    let mut session = Session::new(
        server.core.clone(),
        server.guard.clone(),
        server.budget.clone(),
        server.counters.clone(),
    );
    loop {
        let request = match framed.next(&mut stopping).await {
            Next::Request(request) => request,
            Next::Ended => return,
            Next::Late => {
                let late = format!(
                    "CLIENT_ERROR a request took longer than {:?} to arrive\r\n",
                    server.frame_timeout
                );
                let _ = framed.send(Bytes::from(late)).await;
                return;
            }
            Next::Refused(fatal) => {
                let _ = framed.send(Bytes::from(format!("{fatal}\r\n"))).await;
                return;
            }
        };
        let answer = match request {
            Ok(request) => {
                let request_bytes = request_bytes(&request);
                session.run(request, request_bytes).await
            }
            Err(refusal) => session::Answer {
                reply: (!refusal.noreply).then(|| Bytes::from(format!("{}\r\n", refusal.line))),
                close: false,
            },
        };
        if let Some(reply) = answer.reply
            && framed.send(reply).await.is_err()
        {
            return;
        }
        if answer.close {
            return;
        }
    }
}

/// What a request weighs for the write budget: its key and value, and
/// room for the rest of its line.
fn request_bytes(request: &codec::Request) -> usize {
    const LINE_BYTES: usize = 64;
    match request {
        codec::Request::Store(s) => s.key.len() + s.data.len() + LINE_BYTES,
        _ => LINE_BYTES,
    }
}
