//! The Redis protocol (RESP2) on a port of its own (`--resp-listen`), so
//! that Redis clients and tools (`redis-cli`, `redis-benchmark`, client
//! libraries) work unchanged: `GET`, `SET` (with `EX`, `PX`, `NX`), `DEL`,
//! `EXISTS`, `MGET`, `MSET`, `SCAN` (with `MATCH`, `COUNT`), `PING`,
//! `ECHO`, `AUTH`, `INFO`, `QUIT`. Every command goes to the same service
//! core as REST and gRPC: reads are linearizable, a write is answered once
//! a quorum has it on disk, a follower forwards a write to the leader.
//!
//! Commands on one connection run one after the other, in order, each
//! reply written before the next command runs (pipelined requests wait in
//! the connection's buffer meanwhile).

mod codec;
mod command;
mod inline;
mod pattern;
mod session;

use std::sync::Arc;
use std::time::Duration;

use redis_protocol::resp2::types::Resp2Frame;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::admission::WriteBudget;
use crate::auth::Guard;
use crate::core::Core;
use crate::tcp_front::{self, Cap, Connections, Next, Requests};
use crate::tls_net::Accepted;
use codec::Frames;
use session::{Session, error};
use tokio_rustls::TlsAcceptor;

/// Room for a request frame beyond the largest request the node takes:
/// the command's name, the key and the framing.
const FRAME_OVERHEAD_BYTES: usize = 64 << 10;

/// What each RESP connection serves with.
pub struct RespServer {
    core: Arc<Core>,
    guard: Arc<Guard>,
    budget: Arc<WriteBudget>,
    max_frame_bytes: usize,
    /// How long a request frame may take to arrive, from its first byte.
    frame_timeout: Duration,
    max_connections: usize,
    connections: Arc<Connections>,
    /// The node's TLS, when it has a certificate: clients need one too.
    tls: Option<TlsAcceptor>,
}

impl RespServer {
    pub fn new(
        core: Arc<Core>,
        guard: Arc<Guard>,
        budget: Arc<WriteBudget>,
        frame_timeout: Duration,
        max_connections: usize,
        tls: Option<TlsAcceptor>,
    ) -> Arc<Self> {
        let max_frame_bytes = core.limits().max_request_bytes + FRAME_OVERHEAD_BYTES;
        Arc::new(RespServer {
            core,
            guard,
            budget,
            max_frame_bytes,
            frame_timeout,
            max_connections,
            connections: Arc::default(),
            tls,
        })
    }
}

/// Accepts RESP connections on `listener` until `stopping` turns true
/// (`crate::tcp_front::serve`).
pub async fn serve(
    listener: TcpListener,
    server: Arc<RespServer>,
    stopping: watch::Receiver<bool>,
) {
    let cap = Cap {
        max_connections: server.max_connections,
        // Redis's own words.
        refusal: b"-ERR max number of clients reached\r\n",
    };
    let connections = server.connections.clone();
    tcp_front::serve(
        listener,
        "RESP",
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
    server: Arc<RespServer>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut framed = Requests::new(
        stream,
        Frames::new(server.max_frame_bytes),
        server.frame_timeout,
    );
    let mut session = Session::new(
        server.core.clone(),
        server.guard.clone(),
        server.budget.clone(),
        server.connections.clone(),
    );
    loop {
        let frame = match framed.next(&mut stopping).await {
            Next::Request(frame) => frame,
            Next::Ended => return,
            Next::Late => {
                let late = format!(
                    "Protocol error: a request took longer than {:?} to arrive",
                    server.frame_timeout
                );
                let _ = framed.send(error("ERR", &late)).await;
                return;
            }
            Next::Refused(refused) => {
                let _ = framed.send(error("ERR", &refused.to_string())).await;
                return;
            }
        };
        let frame_bytes = frame.encode_len(false);
        let answer = match command::parse(frame) {
            Ok(command) => session.run(command, frame_bytes).await,
            Err(refusal) => error("ERR", &refusal.0).into(),
        };
        if framed.send(answer.reply).await.is_err() || answer.close {
            return;
        }
    }
}
