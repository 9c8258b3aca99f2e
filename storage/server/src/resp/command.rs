//! The commands the RESP listener takes, read from a request frame (an
//! array of bulk strings, as every Redis client sends them), with the
//! error replies Redis gives for a wrong one.

use bytes::Bytes;
use redis_protocol::resp2::types::BytesFrame;

/// Keys a `SCAN` page holds when the client gives no `COUNT` (Redis's
/// default).
pub const DEFAULT_SCAN_COUNT: u32 = 10;

#[derive(Debug, PartialEq)]
pub enum Command {
    Ping(Option<Bytes>),
    Echo(Bytes),
    /// `AUTH token` or `AUTH user token`: the token is the cluster's, the
    /// user name is not checked.
    Auth(Bytes),
    Get(Bytes),
    Set(Set),
    Del(Vec<Bytes>),
    Exists(Vec<Bytes>),
    MGet(Vec<Bytes>),
    MSet(Vec<(Bytes, Bytes)>),
    Scan(Scan),
    Info,
    /// `COMMAND` and its subcommands: what `redis-cli` asks on start.
    Introspect,
    Quit,
}

#[derive(Debug, PartialEq)]
pub struct Set {
    pub key: Bytes,
    pub value: Bytes,
    /// `EX seconds` or `PX milliseconds`: the key goes after this long.
    pub ttl_ms: Option<u64>,
    /// `NX`: only if the key does not exist.
    pub only_if_absent: bool,
}

#[derive(Debug, PartialEq)]
pub struct Scan {
    /// 0 starts a scan; any other value continues the one that returned it.
    pub cursor: u64,
    /// `MATCH pattern`, a glob over the keys.
    pub pattern: Option<Bytes>,
    pub count: u32,
}

/// A request that is not a command this listener takes, as the error reply
/// says it (without the `ERR ` prefix).
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

fn refuse(message: impl Into<String>) -> Refusal {
    Refusal(message.into())
}

fn wrong_arity(name: &str) -> Refusal {
    refuse(format!(
        "wrong number of arguments for '{}' command",
        name.to_ascii_lowercase()
    ))
}

fn not_an_integer() -> Refusal {
    refuse("value is not an integer or out of range")
}

fn integer(arg: &[u8]) -> Result<i64, Refusal> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(not_an_integer)
}

/// The command a request frame carries.
pub fn parse(frame: BytesFrame) -> Result<Command, Refusal> {
    let BytesFrame::Array(parts) = frame else {
        return Err(refuse(
            "Protocol error: expected an array of bulk strings (inline commands are not taken)",
        ));
    };
    let mut args = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            BytesFrame::BulkString(b) | BytesFrame::SimpleString(b) => args.push(b),
            _ => return Err(refuse("Protocol error: expected bulk strings")),
        }
    }
    let Some((name, args)) = args.split_first() else {
        return Err(refuse("Protocol error: empty command"));
    };
    let name = String::from_utf8_lossy(name).to_ascii_uppercase();
    let n = args.len();
    let command = match name.as_str() {
        "PING" if n <= 1 => Command::Ping(args.first().cloned()),
        "ECHO" if n == 1 => Command::Echo(args[0].clone()),
        "AUTH" if n == 1 || n == 2 => Command::Auth(args[n - 1].clone()),
        "GET" if n == 1 => Command::Get(args[0].clone()),
        "SET" if n >= 2 => Command::Set(set(args)?),
        "DEL" | "UNLINK" if n >= 1 => Command::Del(args.to_vec()),
        "EXISTS" if n >= 1 => Command::Exists(args.to_vec()),
        "MGET" if n >= 1 => Command::MGet(args.to_vec()),
        "MSET" if n >= 2 && n % 2 == 0 => Command::MSet(
            args.chunks(2)
                .map(|kv| (kv[0].clone(), kv[1].clone()))
                .collect(),
        ),
        "SCAN" if n >= 1 => Command::Scan(scan(args)?),
        "INFO" if n <= 1 => Command::Info,
        "COMMAND" => Command::Introspect,
        "QUIT" => Command::Quit,
        "PING" | "ECHO" | "AUTH" | "GET" | "SET" | "DEL" | "UNLINK" | "EXISTS" | "MGET"
        | "MSET" | "SCAN" | "INFO" => return Err(wrong_arity(&name)),
        _ => {
            let first: Vec<String> = args
                .iter()
                .take(3)
                .map(|a| format!("'{}'", String::from_utf8_lossy(a)))
                .collect();
            return Err(refuse(format!(
                "unknown command '{}', with args beginning with: {}",
                name.to_ascii_lowercase(),
                first.join(" ")
            )));
        }
    };
    Ok(command)
}

/// `SET key value [NX] [EX seconds | PX milliseconds]`.
fn set(args: &[Bytes]) -> Result<Set, Refusal> {
    let mut set = Set {
        key: args[0].clone(),
        value: args[1].clone(),
        ttl_ms: None,
        only_if_absent: false,
    };
    let mut rest = args[2..].iter();
    while let Some(option) = rest.next() {
        match option.to_ascii_uppercase().as_slice() {
            b"NX" => set.only_if_absent = true,
            b"XX" => {
                return Err(refuse(
                    "SET ... XX is not supported here: use a compare-and-swap (gRPC \
                     KV/CompareAndSwap, REST POST /v1/cas) to replace only an existing value",
                ));
            }
            unit @ (b"EX" | b"PX") if set.ttl_ms.is_none() => {
                let amount = integer(rest.next().ok_or_else(|| refuse("syntax error"))?)?;
                let per = if unit == b"EX" { 1000 } else { 1 };
                let ttl = u64::try_from(amount)
                    .ok()
                    .filter(|&a| a > 0)
                    .and_then(|a| a.checked_mul(per))
                    .ok_or_else(|| refuse("invalid expire time in 'set' command"))?;
                set.ttl_ms = Some(ttl);
            }
            _ => return Err(refuse("syntax error")),
        }
    }
    Ok(set)
}

/// `SCAN cursor [MATCH pattern] [COUNT count]`.
fn scan(args: &[Bytes]) -> Result<Scan, Refusal> {
    let cursor = std::str::from_utf8(&args[0])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| refuse("invalid cursor"))?;
    let mut scan = Scan {
        cursor,
        pattern: None,
        count: DEFAULT_SCAN_COUNT,
    };
    let mut rest = args[1..].iter();
    while let Some(option) = rest.next() {
        let value = rest.next().ok_or_else(|| refuse("syntax error"))?;
        match option.to_ascii_uppercase().as_slice() {
            b"MATCH" => scan.pattern = Some(value.clone()),
            b"COUNT" => {
                scan.count = u32::try_from(integer(value)?)
                    .ok()
                    .filter(|&c| c > 0)
                    .ok_or_else(|| refuse("syntax error"))?;
            }
            _ => return Err(refuse("syntax error")),
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(args: &[&str]) -> BytesFrame {
        BytesFrame::Array(
            args.iter()
                .map(|a| BytesFrame::BulkString(Bytes::copy_from_slice(a.as_bytes())))
                .collect(),
        )
    }

    fn parsed(args: &[&str]) -> Result<Command, Refusal> {
        parse(frame(args))
    }

    #[test]
    fn commands_are_read_whatever_their_case() {
        // Proves: the name is case-insensitive and the arguments are kept
        // as sent.
        assert_eq!(parsed(&["get", "k"]), Ok(Command::Get("k".into())));
        assert_eq!(parsed(&["PiNg"]), Ok(Command::Ping(None)));
        assert_eq!(
            parsed(&["MSET", "a", "1", "b", "2"]),
            Ok(Command::MSet(vec![
                ("a".into(), "1".into()),
                ("b".into(), "2".into())
            ]))
        );
        assert_eq!(
            parsed(&["AUTH", "default", "tok"]),
            Ok(Command::Auth("tok".into()))
        );
    }

    #[test]
    fn set_takes_its_options() {
        // Proves: EX and PX become a time to live in milliseconds, NX is
        // kept, and XX, a second expiry, a zero or negative expiry and an
        // unknown option are refused with Redis's messages.
        let Ok(Command::Set(s)) = parsed(&["SET", "k", "v", "EX", "10", "nx"]) else {
            panic!("a set");
        };
        assert_eq!((s.ttl_ms, s.only_if_absent), (Some(10_000), true));
        let Ok(Command::Set(s)) = parsed(&["SET", "k", "v", "PX", "250"]) else {
            panic!("a set");
        };
        assert_eq!(s.ttl_ms, Some(250));
        assert!(
            parsed(&["SET", "k", "v", "XX"])
                .unwrap_err()
                .0
                .contains("not supported")
        );
        assert_eq!(
            parsed(&["SET", "k", "v", "EX", "1", "PX", "5"]),
            Err(refuse("syntax error"))
        );
        assert_eq!(
            parsed(&["SET", "k", "v", "EX", "0"]),
            Err(refuse("invalid expire time in 'set' command"))
        );
        assert_eq!(parsed(&["SET", "k", "v", "EX", "x"]), Err(not_an_integer()));
        assert_eq!(
            parsed(&["SET", "k", "v", "KEEPTTL"]),
            Err(refuse("syntax error"))
        );
    }

    #[test]
    fn scan_takes_a_cursor_a_pattern_and_a_count() {
        // Proves: the cursor is a number, MATCH and COUNT are optional and
        // COUNT defaults to 10.
        assert_eq!(
            parsed(&["SCAN", "0"]),
            Ok(Command::Scan(Scan {
                cursor: 0,
                pattern: None,
                count: DEFAULT_SCAN_COUNT
            }))
        );
        assert_eq!(
            parsed(&["scan", "17", "match", "user:*", "count", "100"]),
            Ok(Command::Scan(Scan {
                cursor: 17,
                pattern: Some("user:*".into()),
                count: 100
            }))
        );
        assert_eq!(parsed(&["SCAN", "x"]), Err(refuse("invalid cursor")));
        assert_eq!(parsed(&["SCAN", "0", "COUNT"]), Err(refuse("syntax error")));
        assert_eq!(
            parsed(&["SCAN", "0", "COUNT", "0"]),
            Err(refuse("syntax error"))
        );
    }

    #[test]
    fn wrong_commands_get_redis_errors() {
        // Proves: a wrong argument count, an unknown command and a frame
        // that is not an array of bulk strings are refused, each with the
        // message a Redis client expects.
        assert_eq!(
            parsed(&["GET"]),
            Err(refuse("wrong number of arguments for 'get' command"))
        );
        assert_eq!(
            parsed(&["MSET", "a", "1", "b"]),
            Err(refuse("wrong number of arguments for 'mset' command"))
        );
        assert_eq!(
            parsed(&["FLUSHALL", "ASYNC"]),
            Err(refuse(
                "unknown command 'flushall', with args beginning with: 'ASYNC'"
            ))
        );
        assert!(parse(BytesFrame::Integer(1)).is_err());
        assert!(parse(BytesFrame::Array(vec![BytesFrame::Integer(1)])).is_err());
        assert!(parse(BytesFrame::Array(vec![])).is_err());
    }
}
