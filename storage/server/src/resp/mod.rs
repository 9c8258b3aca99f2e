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
mod pattern;
mod session;

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use redis_protocol::resp2::types::Resp2Frame;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::codec::Framed;

use crate::admission::WriteBudget;
use crate::auth::Guard;
use crate::core::Core;
use codec::{FrameError, Frames};
use session::{Session, error};

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
}

impl RespServer {
    pub fn new(
        core: Arc<Core>,
        guard: Arc<Guard>,
        budget: Arc<WriteBudget>,
        frame_timeout: Duration,
    ) -> Arc<Self> {
        let max_frame_bytes = core.limits().max_request_bytes + FRAME_OVERHEAD_BYTES;
        Arc::new(RespServer {
            core,
            guard,
            budget,
            max_frame_bytes,
            frame_timeout,
        })
    }
}

/// Accepts RESP connections on `listener` until `stopping` turns true,
/// then ends every connection (those idle at once, the others after the
/// command they are running) and returns once all have ended, so that
/// nothing of the node is left in use.
pub async fn serve(
    listener: TcpListener,
    server: Arc<RespServer>,
    stopping: watch::Receiver<bool>,
) {
    let mut stop = stopping.clone();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection(stream, server.clone(), stopping.clone()));
                }
                Err(e) => {
                    // Out of descriptors, say: try again shortly.
                    tracing::warn!(error = %e, "RESP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            // Reap the connections that ended.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = stopped(&mut stop) => break,
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Resolves once the node is stopping.
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

async fn connection(
    stream: TcpStream,
    server: Arc<RespServer>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut framed = Framed::new(stream, Frames::new(server.max_frame_bytes));
    let mut session = Session::new(
        server.core.clone(),
        server.guard.clone(),
        server.budget.clone(),
    );
    loop {
        // An idle connection waits as long as it likes; once a request's
        // first byte is in, the whole request has `frame_timeout` to arrive
        // (a client trickling a request holds its buffer that long at most).
        if framed.read_buffer().is_empty() {
            tokio::select! {
                readable = framed.get_ref().readable() => if readable.is_err() { return },
                () = stopped(&mut stopping) => return,
            }
        }
        let next = tokio::select! {
            next = tokio::time::timeout(server.frame_timeout, framed.next()) => next,
            () = stopped(&mut stopping) => return,
        };
        let Ok(next) = next else {
            let late = format!(
                "Protocol error: a request took longer than {:?} to arrive",
                server.frame_timeout
            );
            let _ = framed.send(error("ERR", &late)).await;
            return;
        };
        let frame = match next {
            None | Some(Err(FrameError::Io(_))) => return,
            Some(Err(refused)) => {
                // The input cannot be read on from here: say why and close.
                let _ = framed.send(error("ERR", &refused.to_string())).await;
                return;
            }
            Some(Ok(frame)) => frame,
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
