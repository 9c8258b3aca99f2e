//! TLS on the node's port and on its connections to other members, when
//! the node is given a certificate (`--tls-cert`, `--tls-key`, `--tls-ca`).
//!
//! Every connection to the port must show a certificate issued by the
//! cluster's CA: peers (the raft transport, forwarding, status gathering),
//! the gateway, and anyone calling a node directly. The public API is not
//! served without one either, so no method (the internal raft transport,
//! membership and the `Local*` methods included) is reachable by a process
//! that holds no certificate of the cluster.
//!
//! The peer preface (`peer_net`) stays outside TLS: a control-lane
//! connection writes it in the clear, then starts TLS, so the port still
//! sorts connections by their first bytes without decrypting anything.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use strata_tls::rustls::pki_types::ServerName;
use strata_tls::rustls::{ClientConfig, ServerConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector, client, server};
use tokio_util::either::Either;
use tonic::transport::Uri;

/// A connection as the node's servers get it: plain or over TLS.
pub type Accepted = Either<TcpStream, server::TlsStream<TcpStream>>;

/// A connection as the node's channels make it: plain or over TLS.
pub type Connected = TokioIo<Either<TcpStream, client::TlsStream<TcpStream>>>;

/// How long a caller may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Completes the server side of a TLS handshake on `tcp`; a caller with no
/// certificate, or one the cluster's CA did not issue, fails here.
pub async fn accept(
    acceptor: TlsAcceptor,
    tcp: TcpStream,
    from: SocketAddr,
) -> io::Result<(Accepted, SocketAddr)> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => Ok((Either::Right(tls), from)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the TLS handshake took too long",
        )),
    }
}

pub fn acceptor(config: &Arc<ServerConfig>) -> TlsAcceptor {
    TlsAcceptor::from(config.clone())
}

/// Connects to `uri`'s authority, writes `preface` first (in the clear),
/// then starts TLS with `tls` when given, checking the member's
/// certificate against the host it was dialled by.
pub async fn connect(
    uri: Uri,
    preface: &'static [u8],
    tls: Option<Arc<ClientConfig>>,
) -> io::Result<Connected> {
    let authority = uri
        .authority()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address in the uri"))?;
    let mut tcp = TcpStream::connect(authority.as_str()).await?;
    tcp.set_nodelay(true)?;
    if !preface.is_empty() {
        tcp.write_all(preface).await?;
    }
    let Some(tls) = tls else {
        return Ok(TokioIo::new(Either::Left(tcp)));
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let tls = TlsConnector::from(tls).connect(name, tcp).await?;
    Ok(TokioIo::new(Either::Right(tls)))
}
