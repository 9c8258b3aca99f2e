//! Redis's inline commands: a command typed as plain text on one line
//! (`PING`, `SET greeting "hello there"`), as `nc`, telnet and some health
//! checks send it, instead of an array of bulk strings. Arguments are
//! separated by spaces; double quotes take `\"`, `\\`, `\n`, `\r`, `\t` and
//! `\xHH` escapes, single quotes only `\'`; an empty line is skipped.

use bytes::{Bytes, BytesMut};

use super::codec::FrameError;

/// The longest inline command line Redis takes.
pub const MAX_INLINE_BYTES: usize = 64 << 10;

/// Whether `first` begins a RESP frame rather than an inline command.
pub fn starts_frame(first: u8) -> bool {
    matches!(first, b'*' | b'$' | b'+' | b'-' | b':')
}

/// Takes one whole line from `src` and splits it into arguments; `None`
/// while the line is not whole. An empty line gives no arguments.
pub fn take(src: &mut BytesMut) -> Result<Option<Vec<Bytes>>, FrameError> {
    let Some(end) = src.iter().position(|&b| b == b'\n') else {
        if src.len() > MAX_INLINE_BYTES {
            return Err(FrameError::Protocol("too big inline request".into()));
        }
        return Ok(None);
    };
    let line = src.split_to(end + 1);
    let line = line[..end].strip_suffix(b"\r").unwrap_or(&line[..end]);
    split(line).map(Some)
}

fn split(line: &[u8]) -> Result<Vec<Bytes>, FrameError> {
    let unbalanced = || FrameError::Protocol("unbalanced quotes in request".into());
    let mut args = Vec::new();
    let mut rest = line;
    loop {
        rest = trim_start(rest);
        let Some(&first) = rest.first() else {
            return Ok(args);
        };
        let mut arg = Vec::new();
        match first {
            b'"' => {
                let mut i = 1;
                loop {
                    match rest.get(i) {
                        None => return Err(unbalanced()),
                        Some(b'"') => break,
                        Some(b'\\') => {
                            let (byte, used) = escape(&rest[i + 1..]).ok_or_else(unbalanced)?;
                            arg.push(byte);
                            i += 1 + used;
                        }
                        Some(&b) => {
                            arg.push(b);
                            i += 1;
                        }
                    }
                }
                rest = after_quote(&rest[i + 1..]).ok_or_else(unbalanced)?;
            }
            b'\'' => {
                let mut i = 1;
                loop {
                    match (rest.get(i), rest.get(i + 1)) {
                        (None, _) => return Err(unbalanced()),
                        (Some(b'\\'), Some(b'\'')) => {
                            arg.push(b'\'');
                            i += 2;
                        }
                        (Some(b'\''), _) => break,
                        (Some(&b), _) => {
                            arg.push(b);
                            i += 1;
                        }
                    }
                }
                rest = after_quote(&rest[i + 1..]).ok_or_else(unbalanced)?;
            }
            _ => {
                let len = rest
                    .iter()
                    .position(|b| b.is_ascii_whitespace())
                    .unwrap_or(rest.len());
                arg.extend_from_slice(&rest[..len]);
                rest = &rest[len..];
            }
        }
        args.push(Bytes::from(arg));
    }
}

fn trim_start(mut s: &[u8]) -> &[u8] {
    while let Some((b, rest)) = s.split_first() {
        if !b.is_ascii_whitespace() {
            break;
        }
        s = rest;
    }
    s
}

/// What follows a closing quote must be a space or the end (Redis's rule).
fn after_quote(rest: &[u8]) -> Option<&[u8]> {
    match rest.first() {
        None => Some(rest),
        Some(b) if b.is_ascii_whitespace() => Some(rest),
        Some(_) => None,
    }
}

/// The byte an escape after `\` stands for, and how many bytes it used.
fn escape(s: &[u8]) -> Option<(u8, usize)> {
    let hex = |b: u8| (b as char).to_digit(16);
    match s {
        [b'x', h, l, ..] if hex(*h).is_some() && hex(*l).is_some() => {
            Some(((hex(*h)? * 16 + hex(*l)?) as u8, 3))
        }
        [b'n', ..] => Some((b'\n', 1)),
        [b'r', ..] => Some((b'\r', 1)),
        [b't', ..] => Some((b'\t', 1)),
        [b'b', ..] => Some((8, 1)),
        [b'a', ..] => Some((7, 1)),
        [other, ..] => Some((*other, 1)),
        [] => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        split(line.as_bytes())
            .unwrap()
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn words_quotes_and_escapes_split_as_redis_splits_them() {
        // Proves Redis's inline splitting: spaces between words, double
        // quotes with escapes (\n, \", \x41), single quotes taking \' only.
        assert_eq!(args("PING"), ["PING"]);
        assert_eq!(args("  SET  k   v "), ["SET", "k", "v"]);
        assert_eq!(
            args(r#"SET k "hello there\n\"x\x41""#),
            ["SET", "k", "hello there\n\"xA"]
        );
        assert_eq!(args(r"SET k 'it\'s \n'"), ["SET", "k", r"it's \n"]);
        assert!(args("").is_empty());
    }

    #[test]
    fn unbalanced_quotes_and_a_line_too_long_are_protocol_errors() {
        // Proves: an open quote, or a quote followed by a letter, is refused;
        // so is a line with no end past 64 KiB, before more of it is held.
        for line in [r#"SET k "open"#, "SET k 'open", r#"SET k "a"b"#] {
            assert!(split(line.as_bytes()).is_err(), "{line}");
        }
        let mut long = BytesMut::from(&vec![b'a'; MAX_INLINE_BYTES + 1][..]);
        assert!(take(&mut long).is_err());
        let mut partial = BytesMut::from(&b"PI"[..]);
        assert!(take(&mut partial).unwrap().is_none());
    }
}
