//! gRPC methods that take one request message must refuse a body carrying
//! more. tonic decodes the first message and silently drains the rest, so a
//! call with two messages would apply the first and answer OK. This body
//! wrapper follows the length-prefixed framing as the bytes pass and fails
//! the body with INVALID_ARGUMENT when a second message begins; tonic reads
//! the whole body before it calls the handler, so nothing is applied.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};

/// Which methods of a service take exactly one request message.
#[derive(Clone, Copy, Debug)]
pub enum Requests {
    /// Every method (unary and server-streaming methods).
    One,
    /// Every method but those named (client- or bidi-streaming methods).
    OneExcept(&'static [&'static str]),
    /// No limit (a service of streaming methods).
    Any,
}

impl Requests {
    /// Whether the method at `path` (`/package.Service/Method`) takes one message.
    pub fn one_for(self, path: &str) -> bool {
        match self {
            Requests::One => true,
            Requests::OneExcept(streaming) => {
                let method = path.rsplit('/').next().unwrap_or_default();
                !streaming.contains(&method)
            }
            Requests::Any => false,
        }
    }
}

/// Where the framing parser stands: inside a 5-byte message header, or
/// inside a message's payload.
#[derive(Debug, PartialEq)]
enum Position {
    Header { read: usize, buf: [u8; 5] },
    Payload { left: u64 },
}

/// A request body that errors out when a second gRPC message starts.
pub struct OneMessage<B> {
    inner: B,
    position: Position,
    messages: u32,
}

impl<B> OneMessage<B> {
    pub fn new(inner: B) -> Self {
        OneMessage {
            inner,
            position: Position::Header {
                read: 0,
                buf: [0; 5],
            },
            messages: 0,
        }
    }

    /// Advances the framing parser over `data`; an error once a second
    /// message begins.
    fn follow(&mut self, mut data: &[u8]) -> Result<(), tonic::Status> {
        while !data.is_empty() {
            match &mut self.position {
                Position::Header { read, buf } => {
                    if *read == 0 {
                        self.messages += 1;
                        if self.messages > 1 {
                            return Err(tonic::Status::invalid_argument(
                                "this method takes exactly one request message; the call carried more",
                            ));
                        }
                    }
                    let n = (5 - *read).min(data.len());
                    buf[*read..*read + n].copy_from_slice(&data[..n]);
                    *read += n;
                    data = &data[n..];
                    if *read == 5 {
                        let left = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]);
                        self.position = Position::Payload {
                            left: u64::from(left),
                        };
                    }
                }
                Position::Payload { left } => {
                    let n = (*left).min(data.len() as u64);
                    *left -= n;
                    // n <= data.len(), so the cast back cannot truncate.
                    data = &data[n as usize..];
                    if *left == 0 {
                        self.position = Position::Header {
                            read: 0,
                            buf: [0; 5],
                        };
                    }
                }
            }
        }
        // A header whose payload is empty ends the message at once.
        if self.position == (Position::Payload { left: 0 }) {
            self.position = Position::Header {
                read: 0,
                buf: [0; 5],
            };
        }
        Ok(())
    }

    /// At the end of the body: an error unless exactly one whole message came.
    fn finish(&mut self) -> Result<(), tonic::Status> {
        if self.messages == 0 {
            return Err(tonic::Status::invalid_argument(
                "the call carried no request message",
            ));
        }
        match self.position {
            Position::Header { read: 0, .. } => Ok(()),
            _ => Err(tonic::Status::invalid_argument(
                "the request message is truncated: the body ended inside it",
            )),
        }
    }
}

impl<B> Body for OneMessage<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<tonic::codegen::StdError>,
{
    type Data = Bytes;
    type Error = tonic::codegen::StdError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
            None => {
                return Poll::Ready(this.finish().err().map(|s| Err(Box::new(s) as _)));
            }
        };
        if let Some(data) = frame.data_ref()
            && let Err(status) = this.follow(data.chunk())
        {
            return Poll::Ready(Some(Err(Box::new(status))));
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(payload: &[u8]) -> Vec<u8> {
        let mut b = vec![0u8];
        b.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        b.extend_from_slice(payload);
        b
    }

    /// Feeds `bytes` in chunks of `chunk` and reports whether it was refused.
    fn refused(bytes: &[u8], chunk: usize) -> bool {
        let mut body = OneMessage::new(());
        bytes.chunks(chunk).any(|c| body.follow(c).is_err())
    }

    #[test]
    fn one_message_passes_whatever_the_chunking() {
        let one = frame(b"hello, raft");
        for chunk in 1..=one.len() {
            assert!(!refused(&one, chunk), "chunk {chunk}");
        }
        assert!(!refused(&frame(b""), 1), "an empty message is one message");
    }

    #[test]
    fn a_second_message_is_refused_whatever_the_chunking() {
        let mut two = frame(b"first");
        two.extend(frame(b"second"));
        for chunk in 1..=two.len() {
            assert!(refused(&two, chunk), "chunk {chunk}");
        }
        let mut after_empty = frame(b"");
        after_empty.extend(frame(b"x"));
        assert!(refused(&after_empty, 3));
        let mut trailing_byte = frame(b"first");
        trailing_byte.push(0);
        assert!(refused(&trailing_byte, 64), "even a lone extra byte");
    }

    #[test]
    fn a_missing_or_truncated_message_is_refused_at_the_end() {
        let one = frame(b"payload");
        for cut in 0..one.len() {
            let mut body = OneMessage::new(());
            body.follow(&one[..cut]).expect("no second message");
            assert!(body.finish().is_err(), "cut at {cut}");
        }
        let mut body = OneMessage::new(());
        body.follow(&one).unwrap();
        assert!(body.finish().is_ok());
    }

    #[test]
    fn streaming_methods_are_exempt_by_name() {
        let raft = Requests::OneExcept(&["InstallSnapshot"]);
        assert!(raft.one_for("/strata.v1.Raft/Send"));
        assert!(!raft.one_for("/strata.v1.Raft/InstallSnapshot"));
        assert!(Requests::One.one_for("/strata.v1.KV/Put"));
        assert!(!Requests::Any.one_for("/grpc.reflection.v1.ServerReflection/X"));
    }
}
