//! RESP2 frames on a connection, with a bound on what a client may send:
//! the frame decoder of `redis-protocol` buffers a frame until it is
//! whole, however large, so a client announcing a bulk string of 4 GiB (or
//! sending an endless one) would hold that much of the node's memory. A
//! request frame larger than `max_frame_bytes` ends the connection with an
//! error reply instead.

use bytes::BytesMut;
use redis_protocol::codec::Resp2;
use redis_protocol::error::RedisProtocolError;
use redis_protocol::resp2::types::BytesFrame;
use tokio_util::codec::{Decoder, Encoder};

use super::inline;

/// Why a connection's input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("Protocol error: {0}")]
    Protocol(String),
    #[error("Protocol error: a request frame is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl crate::tcp_front::ConnectionError for FrameError {
    fn is_io(&self) -> bool {
        matches!(self, FrameError::Io(_))
    }
}

impl From<RedisProtocolError> for FrameError {
    fn from(e: RedisProtocolError) -> Self {
        FrameError::Protocol(e.details().to_string())
    }
}

/// RESP2 frames, the requests' size bounded.
#[derive(Debug)]
pub struct Frames {
    inner: Resp2,
    max_frame_bytes: usize,
}

impl Frames {
    pub fn new(max_frame_bytes: usize) -> Self {
        Frames {
            inner: Resp2::default(),
            max_frame_bytes,
        }
    }
}

impl Decoder for Frames {
    type Item = BytesFrame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesFrame>, FrameError> {
        loop {
            match src.first() {
                None => return Ok(None),
                // A command as plain text, as Redis takes it too.
                Some(&first) if !inline::starts_frame(first) => match inline::take(src)? {
                    None => return Ok(None),
                    Some(args) if args.is_empty() => continue,
                    Some(args) => {
                        let args = args.into_iter().map(BytesFrame::BulkString).collect();
                        return Ok(Some(BytesFrame::Array(args)));
                    }
                },
                Some(_) => {}
            }
            return match self.inner.decode(src)? {
                Some(frame) => Ok(Some(frame)),
                // What is buffered is not a whole frame yet: past the
                // limit, it never will be one this node takes.
                None if src.len() > self.max_frame_bytes => Err(FrameError::TooLarge {
                    limit: self.max_frame_bytes,
                }),
                None => Ok(None),
            };
        }
    }
}

impl Encoder<BytesFrame> for Frames {
    type Error = FrameError;

    fn encode(&mut self, frame: BytesFrame, dst: &mut BytesMut) -> Result<(), FrameError> {
        Ok(self.inner.encode(frame, dst)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_frame_is_decoded_and_a_partial_one_waits() {
        // Proves: a command split across reads is decoded once whole.
        let mut frames = Frames::new(1024);
        let mut buf = BytesMut::from(&b"*2\r\n$3\r\nGET\r\n$1"[..]);
        assert!(frames.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(b"\r\nk\r\n");
        let frame = frames.decode(&mut buf).unwrap().expect("whole");
        assert_eq!(
            frame,
            BytesFrame::Array(vec![
                BytesFrame::BulkString("GET".into()),
                BytesFrame::BulkString("k".into()),
            ])
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn a_frame_past_the_limit_is_refused_before_it_is_whole() {
        // Proves: a bulk string announced larger than the limit is refused
        // once the buffered bytes pass the limit, without waiting for (and
        // holding) the rest.
        let mut frames = Frames::new(64);
        let mut buf = BytesMut::from(&b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n"[..]);
        assert!(frames.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&[b'v'; 100]);
        assert!(matches!(
            frames.decode(&mut buf),
            Err(FrameError::TooLarge { limit: 64 })
        ));
    }

    #[test]
    fn an_inline_command_is_read_as_the_array_it_stands_for() {
        // Proves: plain-text commands (with an empty line between them)
        // decode to the same arrays a client library sends, and a RESP
        // frame after them still decodes.
        let mut frames = Frames::new(1024);
        let mut buf = BytesMut::from(&b"PING\r\n\r\nSET k \"a b\"\n*1\r\n$4\r\nPING\r\n"[..]);
        let bulk = |s: &'static str| BytesFrame::BulkString(s.into());
        assert_eq!(
            frames.decode(&mut buf).unwrap(),
            Some(BytesFrame::Array(vec![bulk("PING")]))
        );
        assert_eq!(
            frames.decode(&mut buf).unwrap(),
            Some(BytesFrame::Array(vec![bulk("SET"), bulk("k"), bulk("a b")]))
        );
        assert_eq!(
            frames.decode(&mut buf).unwrap(),
            Some(BytesFrame::Array(vec![bulk("PING")]))
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        // Proves: bytes that are no RESP frame are refused as such.
        let mut frames = Frames::new(1024);
        let mut buf = BytesMut::from(&b"$-7\r\n"[..]);
        assert!(matches!(
            frames.decode(&mut buf),
            Err(FrameError::Protocol(_))
        ));
    }
}
