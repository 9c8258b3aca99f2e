//! A connection's stream that notes when the next request's first byte
//! came in, so that a request is timed from then, and an idle connection
//! not at all. It sits above TLS: it sees the bytes the protocol reads.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio::time::Instant;

/// `inner`, with a clock that starts at the first byte read while it is
/// stopped.
pub struct Clocked<S> {
    inner: S,
    clock: watch::Sender<Option<Instant>>,
}

impl<S> Clocked<S> {
    pub fn new(inner: S) -> Self {
        Clocked {
            inner,
            clock: watch::Sender::new(None),
        }
    }

    /// Stops the clock (nothing of a request is in), or starts it now
    /// (bytes of the next request are in already).
    pub fn reset(&self, pending: bool) {
        self.clock.send_replace(pending.then(Instant::now));
    }

    /// When the clock started, once it has.
    pub fn started(&self) -> watch::Receiver<Option<Instant>> {
        self.clock.subscribe()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Clocked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.clock.send_if_modified(|started| {
                let stopped = started.is_none();
                if stopped {
                    *started = Some(Instant::now());
                }
                stopped
            });
        }
        read
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Clocked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn the_clock_starts_at_the_first_byte_and_not_before() {
        // Proves: an idle stream leaves the clock stopped; the first byte
        // read starts it, later bytes do not move it; a reset stops it.
        let (client, server) = tokio::io::duplex(64);
        let mut clocked = Clocked::new(server);
        let started = clocked.started();
        let mut client = client;
        assert!(started.borrow().is_none());
        client.write_all(b"ab").await.unwrap();
        let mut byte = [0u8; 1];
        clocked.read_exact(&mut byte).await.unwrap();
        let first = started.borrow().expect("started by the first byte");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        clocked.read_exact(&mut byte).await.unwrap();
        assert_eq!(*started.borrow(), Some(first), "a later byte leaves it");
        clocked.reset(false);
        assert!(started.borrow().is_none());
        clocked.reset(true);
        assert!(started.borrow().is_some(), "pending bytes start it at once");
    }
}
