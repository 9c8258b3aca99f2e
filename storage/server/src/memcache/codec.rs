//! The memcached text protocol's requests as they arrive on a connection:
//! a command line, and for the storage commands a data block of the
//! announced length. A request that is wrong but leaves the input readable
//! (an unknown command, a malformed line, a value over the limit, a data
//! block that does not end where announced) is an item of its own, a
//! [`Refusal`] the connection answers before it reads on, as memcached
//! does; only input that cannot be read on from (a line without end) ends
//! the connection. A value over the limit is skipped as it arrives, never
//! held.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// The longest key memcached takes, and so its clients send.
pub const MAX_KEY_BYTES: usize = 250;
/// The longest command line: a `get` of some 250 keys of the longest kind.
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// memcached's own bound on the announced length of a data block.
const MAX_DATA_BYTES: u64 = i32::MAX as u64 - 2;

/// What a storage command stores, and on what condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    Set,
    /// Only if the key does not exist.
    Add,
    /// Only if the key exists.
    Replace,
    /// After the key's value; only if the key exists.
    Append,
    /// Before the key's value; only if the key exists.
    Prepend,
    /// Only if the key's value was last changed by the write `gets` named
    /// with this unique (its mod index).
    Cas(u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub mode: StoreMode,
    pub key: Bytes,
    pub flags: u32,
    pub exptime: i64,
    pub data: Bytes,
    pub noreply: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `get`, or with `cas` `gets`: each key's value (and its unique).
    Get {
        keys: Vec<Bytes>,
        cas: bool,
    },
    Store(Store),
    Delete {
        key: Bytes,
        noreply: bool,
    },
    /// `incr` (`up`) or `decr` by `delta`.
    Arith {
        key: Bytes,
        delta: u64,
        up: bool,
        noreply: bool,
    },
    Touch {
        key: Bytes,
        exptime: i64,
        noreply: bool,
    },
    /// `stats`, or `stats <group>`.
    Stats(Option<String>),
    Version,
    Verbosity {
        noreply: bool,
    },
    FlushAll {
        noreply: bool,
    },
    Quit,
}

/// A request answered with an error line, after which the connection
/// reads on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The line, without its end: `ERROR`, `CLIENT_ERROR …`, `SERVER_ERROR …`.
    pub line: String,
    /// The request asked for no reply (and gets none).
    pub noreply: bool,
}

impl Refusal {
    fn new(line: impl Into<String>, noreply: bool) -> Self {
        Refusal {
            line: line.into(),
            noreply,
        }
    }

    fn bad_format() -> Self {
        Refusal::new("CLIENT_ERROR bad command line format", false)
    }
}

/// Why a connection's input cannot be read on.
#[derive(Debug, thiserror::Error)]
pub enum Fatal {
    #[error("CLIENT_ERROR line too long: no end of line within {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl crate::tcp_front::ConnectionError for Fatal {
    fn is_io(&self) -> bool {
        matches!(self, Fatal::Io(_))
    }
}

/// The requests of one connection, values bounded by `max_value_bytes`.
#[derive(Debug)]
pub struct Requests {
    max_value_bytes: usize,
    /// A value over the limit being skipped: bytes still to skip, and the
    /// refusal to answer once they are.
    skipping: Option<(usize, Refusal)>,
}

impl Requests {
    pub fn new(max_value_bytes: usize) -> Self {
        Requests {
            max_value_bytes,
            skipping: None,
        }
    }
}

impl Decoder for Requests {
    type Item = Result<Request, Refusal>;
    type Error = Fatal;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Fatal> {
        loop {
            if let Some((left, refusal)) = &mut self.skipping {
                let n = (*left).min(src.len());
                src.advance(n);
                *left -= n;
                if *left > 0 {
                    return Ok(None);
                }
                let refusal = refusal.clone();
                self.skipping = None;
                return Ok(Some(Err(refusal)));
            }
            let Some(end) = src.iter().position(|&b| b == b'\n') else {
                if src.len() > MAX_LINE_BYTES {
                    return Err(Fatal::LineTooLong);
                }
                return Ok(None);
            };
            if end > MAX_LINE_BYTES {
                return Err(Fatal::LineTooLong);
            }
            let line = src[..end].strip_suffix(b"\r").unwrap_or(&src[..end]);
            let tokens: Vec<&[u8]> = line
                .split(|&b| b == b' ')
                .filter(|t| !t.is_empty())
                .collect();
            let parsed = match tokens.first().copied() {
                Some(b"set") => store_line(StoreMode::Set, &tokens),
                Some(b"add") => store_line(StoreMode::Add, &tokens),
                Some(b"replace") => store_line(StoreMode::Replace, &tokens),
                Some(b"append") => store_line(StoreMode::Append, &tokens),
                Some(b"prepend") => store_line(StoreMode::Prepend, &tokens),
                Some(b"cas") => store_line(StoreMode::Cas(0), &tokens),
                _ => Line::Whole(other_line(&tokens)),
            };
            match parsed {
                Line::Whole(request) => {
                    src.advance(end + 1);
                    return Ok(Some(request));
                }
                Line::Data { mut store, bytes } => {
                    if bytes > self.max_value_bytes {
                        src.advance(end + 1);
                        let refusal = Refusal::new(
                            format!(
                                "SERVER_ERROR object too large for cache: {bytes} bytes, the most \
                                 is {}",
                                self.max_value_bytes
                            ),
                            store.noreply,
                        );
                        self.skipping = Some((bytes + 2, refusal));
                        continue;
                    }
                    let whole = end + 1 + bytes + 2;
                    if src.len() < whole {
                        src.reserve(whole - src.len());
                        return Ok(None);
                    }
                    let mut block = src.split_to(whole);
                    block.advance(end + 1);
                    if &block[bytes..] != b"\r\n" {
                        return Ok(Some(Err(Refusal::new(
                            "CLIENT_ERROR bad data chunk",
                            store.noreply,
                        ))));
                    }
                    block.truncate(bytes);
                    store.data = block.freeze();
                    return Ok(Some(Ok(Request::Store(store))));
                }
            }
        }
    }
}

/// Replies go out as the session wrote them.
impl Encoder<Bytes> for Requests {
    type Error = Fatal;

    fn encode(&mut self, reply: Bytes, dst: &mut BytesMut) -> Result<(), Fatal> {
        dst.extend_from_slice(&reply);
        Ok(())
    }
}

/// A command line read: a whole request, or a storage command whose data
/// block of `bytes` follows.
enum Line {
    Whole(Result<Request, Refusal>),
    Data { store: Store, bytes: usize },
}

fn key(token: &[u8]) -> Result<Bytes, Refusal> {
    let printable = token.iter().all(|&b| b > b' ' && b != 0x7f);
    if token.len() > MAX_KEY_BYTES || !printable {
        return Err(Refusal::bad_format());
    }
    Ok(Bytes::copy_from_slice(token))
}

fn number<T: std::str::FromStr>(token: &[u8]) -> Option<T> {
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// Whether the token after the `at` fixed ones is `noreply` (or there is
/// none); `None` when something else follows.
fn noreply(tokens: &[&[u8]], at: usize) -> Option<bool> {
    match &tokens[at.min(tokens.len())..] {
        [] => Some(false),
        [b"noreply"] => Some(true),
        _ => None,
    }
}

/// `<cmd> <key> <flags> <exptime> <bytes> [noreply]`, and for `cas` the
/// unique after the length.
fn store_line(mode: StoreMode, tokens: &[&[u8]]) -> Line {
    let fixed = if mode == StoreMode::Cas(0) { 6 } else { 5 };
    let refuse = |r: Refusal| Line::Whole(Err(r));
    if tokens.len() < fixed {
        return refuse(Refusal::new("ERROR", false));
    }
    let Some(noreply) = noreply(tokens, fixed) else {
        return refuse(Refusal::bad_format());
    };
    let key = match key(tokens[1]) {
        Ok(k) => k,
        Err(r) => return refuse(r),
    };
    let (Some(flags), Some(exptime), Some(bytes)) = (
        number::<u32>(tokens[2]),
        number::<i64>(tokens[3]),
        number::<u64>(tokens[4]).filter(|&b| b <= MAX_DATA_BYTES),
    ) else {
        return refuse(Refusal::bad_format());
    };
    let mode = match mode {
        StoreMode::Cas(_) => match number::<u64>(tokens[5]) {
            Some(unique) => StoreMode::Cas(unique),
            None => return refuse(Refusal::bad_format()),
        },
        other => other,
    };
    Line::Data {
        store: Store {
            mode,
            key,
            flags,
            exptime,
            data: Bytes::new(),
            noreply,
        },
        bytes: bytes as usize,
    }
}

/// Every command without a data block.
fn other_line(tokens: &[&[u8]]) -> Result<Request, Refusal> {
    let Some((&command, args)) = tokens.split_first() else {
        return Err(Refusal::new("ERROR", false));
    };
    match (command, args) {
        (b"get" | b"gets", keys) if !keys.is_empty() => Ok(Request::Get {
            keys: keys.iter().map(|k| key(k)).collect::<Result<_, _>>()?,
            cas: command == b"gets",
        }),
        // `delete <key> [0] [noreply]`: the 0 is an old form's hold time.
        (b"delete", [k, rest @ ..]) => {
            let rest = match rest {
                [b"0", more @ ..] => more,
                other => other,
            };
            match rest {
                [] => Ok(Request::Delete {
                    key: key(k)?,
                    noreply: false,
                }),
                [b"noreply"] => Ok(Request::Delete {
                    key: key(k)?,
                    noreply: true,
                }),
                _ => Err(Refusal::new(
                    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
                    false,
                )),
            }
        }
        (b"incr" | b"decr", [k, delta, ..]) => {
            let noreply = noreply(tokens, 3).ok_or_else(Refusal::bad_format)?;
            let delta = number::<u64>(delta).ok_or_else(|| {
                Refusal::new("CLIENT_ERROR invalid numeric delta argument", noreply)
            })?;
            Ok(Request::Arith {
                key: key(k)?,
                delta,
                up: command == b"incr",
                noreply,
            })
        }
        (b"touch", [k, exptime, ..]) => {
            let noreply = noreply(tokens, 3).ok_or_else(Refusal::bad_format)?;
            let exptime = number::<i64>(exptime)
                .ok_or_else(|| Refusal::new("CLIENT_ERROR invalid exptime argument", noreply))?;
            Ok(Request::Touch {
                key: key(k)?,
                exptime,
                noreply,
            })
        }
        (b"stats", []) => Ok(Request::Stats(None)),
        (b"stats", [group, ..]) => Ok(Request::Stats(Some(
            String::from_utf8_lossy(group).into_owned(),
        ))),
        (b"version", []) => Ok(Request::Version),
        // As memcached: a level and perhaps `noreply`, or `noreply` alone.
        (b"verbosity", [_] | [_, _]) => Ok(Request::Verbosity {
            noreply: args.last() == Some(&&b"noreply"[..]),
        }),
        (b"flush_all", rest) => Ok(Request::FlushAll {
            noreply: rest.last() == Some(&&b"noreply"[..]),
        }),
        (b"quit", []) => Ok(Request::Quit),
        _ => Err(Refusal::new("ERROR", false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(input: &[u8], max_value_bytes: usize) -> Vec<Result<Request, Refusal>> {
        let mut requests = Requests::new(max_value_bytes);
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(item) = requests.decode(&mut buf).unwrap() {
            out.push(item);
        }
        assert!(buf.is_empty(), "left over: {buf:?}");
        out
    }

    fn refused(line: &str) -> Result<Request, Refusal> {
        Err(Refusal::new(line, false))
    }

    #[test]
    fn a_storage_command_waits_for_its_whole_data_block() {
        // Proves: a set split anywhere (even inside the data block's end)
        // is decoded once whole, its value taken as sent, spaces and all.
        let input = b"set k 0 0 11\r\nhello world\r\n";
        for split in 1..input.len() {
            let mut requests = Requests::new(1024);
            let mut buf = BytesMut::from(&input[..split]);
            assert!(
                requests.decode(&mut buf).unwrap().is_none(),
                "split at {split}"
            );
            buf.extend_from_slice(&input[split..]);
            let item = requests.decode(&mut buf).unwrap().expect("whole");
            assert_eq!(
                item,
                Ok(Request::Store(Store {
                    mode: StoreMode::Set,
                    key: Bytes::from_static(b"k"),
                    flags: 0,
                    exptime: 0,
                    data: Bytes::from_static(b"hello world"),
                    noreply: false,
                }))
            );
        }
    }

    #[test]
    fn pipelined_commands_decode_in_order() {
        // Proves: several requests in one read come out one by one, with
        // their options: gets, cas with its unique and noreply, delete in
        // both forms, incr, touch.
        let items = decode_all(
            b"gets a b\r\ncas a 0 60 1 42 noreply\r\nx\r\ndelete a 0\r\ndelete b noreply\r\n\
              incr n 5\r\ntouch t 30 noreply\r\nversion\r\nquit\r\n",
            1024,
        );
        assert_eq!(
            items,
            vec![
                Ok(Request::Get {
                    keys: vec![Bytes::from_static(b"a"), Bytes::from_static(b"b")],
                    cas: true
                }),
                Ok(Request::Store(Store {
                    mode: StoreMode::Cas(42),
                    key: Bytes::from_static(b"a"),
                    flags: 0,
                    exptime: 60,
                    data: Bytes::from_static(b"x"),
                    noreply: true,
                })),
                Ok(Request::Delete {
                    key: Bytes::from_static(b"a"),
                    noreply: false
                }),
                Ok(Request::Delete {
                    key: Bytes::from_static(b"b"),
                    noreply: true
                }),
                Ok(Request::Arith {
                    key: Bytes::from_static(b"n"),
                    delta: 5,
                    up: true,
                    noreply: false
                }),
                Ok(Request::Touch {
                    key: Bytes::from_static(b"t"),
                    exptime: 30,
                    noreply: true
                }),
                Ok(Request::Version),
                Ok(Request::Quit),
            ]
        );
    }

    #[test]
    fn wrong_requests_are_refused_and_the_next_one_is_read() {
        // Proves: an unknown command, a malformed storage line, a key too
        // long or with a control byte, and a bad delta each earn their
        // error line, and the request after them is read as usual.
        let long_key = "k".repeat(MAX_KEY_BYTES + 1);
        let input = format!(
            "frobnicate\r\nset k x 0 1\r\nget {long_key}\r\nget a\tb\r\nincr n -1\r\n\
             delete k 5\r\nget ok\r\nverbosity\r\nversion noreply\r\nquit noreply\r\n"
        );
        let items = decode_all(input.as_bytes(), 1024);
        assert_eq!(items.len(), 10, "{items:?}");
        assert_eq!(items[0], refused("ERROR"));
        assert_eq!(items[1], refused("CLIENT_ERROR bad command line format"));
        assert_eq!(items[2], refused("CLIENT_ERROR bad command line format"));
        assert_eq!(items[3], refused("CLIENT_ERROR bad command line format"));
        assert_eq!(
            items[4],
            refused("CLIENT_ERROR invalid numeric delta argument")
        );
        assert!(
            items[5]
                .as_ref()
                .unwrap_err()
                .line
                .contains("Usage: delete")
        );
        assert_eq!(
            items[6],
            Ok(Request::Get {
                keys: vec![Bytes::from_static(b"ok")],
                cas: false
            })
        );
        // Options a command does not take are refused, not ignored.
        for item in &items[7..] {
            assert_eq!(*item, refused("ERROR"));
        }
    }

    #[test]
    fn a_value_over_the_limit_is_skipped_unheld_and_refused() {
        // Proves: a set announcing more than the limit is answered "object
        // too large" once its data block has gone by, without the block
        // ever being buffered whole, and the next request is read.
        let mut requests = Requests::new(16);
        let mut buf = BytesMut::from(&b"set big 0 0 1000 noreply\r\n"[..]);
        assert!(requests.decode(&mut buf).unwrap().is_none());
        for _ in 0..10 {
            buf.extend_from_slice(&[b'v'; 100]);
            assert!(requests.decode(&mut buf).unwrap().is_none());
            assert!(buf.is_empty(), "the skipped bytes are dropped as they come");
        }
        buf.extend_from_slice(b"\r\nget big\r\n");
        let refusal = requests.decode(&mut buf).unwrap().unwrap().unwrap_err();
        assert!(refusal.line.starts_with("SERVER_ERROR object too large"));
        assert!(refusal.noreply);
        assert_eq!(
            requests.decode(&mut buf).unwrap().unwrap(),
            Ok(Request::Get {
                keys: vec![Bytes::from_static(b"big")],
                cas: false
            })
        );
    }

    #[test]
    fn a_data_block_that_does_not_end_where_announced_is_a_bad_chunk() {
        // Proves: a block longer than announced is refused "bad data
        // chunk" (the announced length and its end consumed, as memcached
        // does), and nothing is stored.
        let items = decode_all(b"set k 0 0 2\r\nabcd\r\n", 1024);
        assert_eq!(items[0], refused("CLIENT_ERROR bad data chunk"));
        // What followed the announced block is read as a command.
        assert_eq!(items.len(), 2);
    }

    #[test]
    fn a_line_without_end_ends_the_connection() {
        // Proves: input with no end of line within the limit is refused
        // as a whole, before more of it is buffered.
        let mut requests = Requests::new(1024);
        let mut buf = BytesMut::from(&vec![b'g'; MAX_LINE_BYTES + 1][..]);
        assert!(matches!(requests.decode(&mut buf), Err(Fatal::LineTooLong)));
    }
}
