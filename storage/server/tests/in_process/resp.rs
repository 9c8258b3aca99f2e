//! The Redis protocol listener (`--resp-listen`) of a node served in this
//! process, driven by an independent Redis client (the `redis` crate) and,
//! for what no client would send, by raw bytes on a socket.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{ErrorKind, RedisError, Value};
use strata_auth::Role;
use strata_server::config::Limits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::served::ServedNode;

/// A Redis client's connection to `node`'s RESP port.
async fn connect(node: &ServedNode) -> MultiplexedConnection {
    redis::Client::open(format!("redis://{}/", node.resp))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn cmd<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> Result<T, RedisError> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(con).await
}

#[tokio::test]
async fn redis_commands_read_and_write_the_same_keys_as_rest() {
    // Proves: PING, ECHO, SET, GET, MSET, MGET, EXISTS, DEL and INFO answer
    // as a Redis client expects, and what RESP writes REST reads (and the
    // other way round): one store behind both front ends.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut con = connect(&node).await;
    assert_eq!(cmd::<String>(&mut con, &["PING"]).await.unwrap(), "PONG");
    assert_eq!(
        cmd::<String>(&mut con, &["ECHO", "hi"]).await.unwrap(),
        "hi"
    );
    assert_eq!(
        cmd::<String>(&mut con, &["SET", "a", "1"]).await.unwrap(),
        "OK"
    );
    assert_eq!(node.rest_get("a").await.as_deref(), Some("1"));
    reqwest::Client::new()
        .put(format!("http://{}/v1/kv/from-rest", node.http))
        .body("r")
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    assert_eq!(
        cmd::<Option<String>>(&mut con, &["GET", "from-rest"])
            .await
            .unwrap(),
        Some("r".into())
    );
    assert_eq!(
        cmd::<Option<String>>(&mut con, &["GET", "none"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        cmd::<String>(&mut con, &["MSET", "b", "2", "c", "3"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(
        cmd::<Vec<Option<String>>>(&mut con, &["MGET", "a", "none", "c"])
            .await
            .unwrap(),
        vec![Some("1".into()), None, Some("3".into())]
    );
    assert_eq!(
        cmd::<i64>(&mut con, &["EXISTS", "a", "b", "none"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        cmd::<i64>(&mut con, &["DEL", "a", "b", "none"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(node.rest_get("a").await, None);
    let info = cmd::<String>(&mut con, &["INFO"]).await.unwrap();
    assert!(info.contains("raft_role:leader"), "{info}");
}

#[tokio::test]
async fn set_nx_writes_only_an_absent_key_and_set_ex_expires() {
    // Proves: SET NX answers OK once and nil after, leaving the first
    // value; SET PX makes the key go after its time to live (the lease
    // it grants ends), as Redis's would.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut con = connect(&node).await;
    let first: Option<String> = cmd(&mut con, &["SET", "once", "first", "NX"])
        .await
        .unwrap();
    assert_eq!(first.as_deref(), Some("OK"));
    let second: Option<String> = cmd(&mut con, &["SET", "once", "second", "NX"])
        .await
        .unwrap();
    assert_eq!(second, None);
    assert_eq!(node.rest_get("once").await.as_deref(), Some("first"));

    assert_eq!(
        cmd::<String>(&mut con, &["SET", "brief", "v", "PX", "1000"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(
        cmd::<Option<String>>(&mut con, &["GET", "brief"])
            .await
            .unwrap(),
        Some("v".into())
    );
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if cmd::<Option<String>>(&mut con, &["GET", "brief"])
            .await
            .unwrap()
            .is_none()
        {
            gone = true;
            break;
        }
    }
    assert!(gone, "a key set with PX 1000 was still there after 10 s");
}

#[tokio::test]
async fn scan_with_match_and_count_returns_every_matching_key_once() {
    // Proves: following SCAN's cursor from 0 back to 0, in pages of COUNT
    // keys, returns each key MATCH selects exactly once and no other, from
    // the state the first page read (a key written meanwhile is not
    // returned).
    let node = ServedNode::start("write", Limits::default()).await;
    let mut con = connect(&node).await;
    let mut pairs = Vec::new();
    for i in 0..45 {
        pairs.push(format!("user:{i:02}"));
        pairs.push("u".to_string());
        pairs.push(format!("item:{i:02}"));
        pairs.push("i".to_string());
    }
    let mut mset = redis::cmd("MSET");
    for p in &pairs {
        mset.arg(p);
    }
    let _: String = mset.query_async(&mut con).await.unwrap();

    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    let mut pages = 0;
    loop {
        let (next, keys): (String, Vec<String>) = cmd(
            &mut con,
            &["SCAN", &cursor, "MATCH", "user:*", "COUNT", "7"],
        )
        .await
        .unwrap();
        seen.extend(keys);
        pages += 1;
        if pages == 1 {
            // Written after the first page: the scan reads the state its
            // first page read, so it does not see this key.
            let _: String = cmd(&mut con, &["SET", "user:44x", "late"]).await.unwrap();
        }
        if next == "0" {
            break;
        }
        cursor = next;
        assert!(pages < 100, "the scan does not end");
    }
    let want: Vec<String> = (0..45).map(|i| format!("user:{i:02}")).collect();
    assert_eq!(seen, want);
    assert!(pages >= 45 / 7, "{pages} pages of at most 7 keys");
    let err = cmd::<Value>(&mut con, &["SCAN", "999"]).await.unwrap_err();
    assert!(err.to_string().contains("invalid cursor"), "{err}");
}

#[tokio::test]
async fn writes_need_a_token_with_the_write_role_when_anonymous_may_only_read() {
    // Proves: with anonymous callers limited to reading, a connection
    // without AUTH reads but its SET is refused UNAUTHENTICATED and not
    // applied; a wrong token is refused at AUTH; a read token cannot
    // write (PERMISSION_DENIED); a write token can.
    let node = ServedNode::start("read", Limits::default()).await;
    let mut con = connect(&node).await;
    assert_eq!(
        cmd::<Option<String>>(&mut con, &["GET", "k"])
            .await
            .unwrap(),
        None
    );
    let refused = cmd::<String>(&mut con, &["SET", "k", "v"])
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("UNAUTHENTICATED"), "{refused}");
    assert_eq!(node.rest_get("k").await, None);

    let wrong = cmd::<String>(&mut con, &["AUTH", "not-a-token"])
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), Some("WRONGPASS"), "{wrong}");

    let read = node.token(Role::Read);
    assert_eq!(
        cmd::<String>(&mut con, &["AUTH", &read]).await.unwrap(),
        "OK"
    );
    let denied = cmd::<String>(&mut con, &["SET", "k", "v"])
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Some("PERMISSION_DENIED"), "{denied}");

    let write = node.token(Role::Write);
    assert_eq!(
        cmd::<String>(&mut con, &["AUTH", "default", &write])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(
        cmd::<String>(&mut con, &["SET", "k", "v"]).await.unwrap(),
        "OK"
    );
    assert_eq!(node.rest_get("k").await.as_deref(), Some("v"));
}

#[tokio::test]
async fn bad_commands_get_clear_errors_and_apply_nothing() {
    // Proves: an unknown command, a wrong argument count, an unsupported
    // option and a value over the node's limit are each answered with an
    // error naming the problem, on a connection that stays usable, and
    // none of them writes anything.
    let node = ServedNode::start(
        "write",
        Limits {
            max_value_bytes: 16,
            ..Limits::default()
        },
    )
    .await;
    let mut con = connect(&node).await;
    let unknown = cmd::<Value>(&mut con, &["FLUSHALL"]).await.unwrap_err();
    assert!(
        unknown.to_string().contains("unknown command 'flushall'"),
        "{unknown}"
    );
    let arity = cmd::<Value>(&mut con, &["GET"]).await.unwrap_err();
    assert!(
        arity.to_string().contains("wrong number of arguments"),
        "{arity}"
    );
    let xx = cmd::<Value>(&mut con, &["SET", "k", "v", "XX"])
        .await
        .unwrap_err();
    assert!(xx.to_string().contains("XX is not supported"), "{xx}");
    let big = "v".repeat(17);
    let too_big = cmd::<Value>(&mut con, &["SET", "k", &big])
        .await
        .unwrap_err();
    assert_eq!(too_big.code(), Some("PAYLOAD_TOO_LARGE"), "{too_big}");
    assert_eq!(too_big.kind(), ErrorKind::ExtensionError);
    assert_eq!(cmd::<String>(&mut con, &["PING"]).await.unwrap(), "PONG");
    assert_eq!(node.rest_get("k").await, None);
}

#[tokio::test]
async fn a_request_frame_past_the_limit_closes_the_connection_unread() {
    // Proves: a bulk string announced larger than the node takes is
    // refused with an error once the bytes sent pass the limit, the
    // connection is closed, and nothing is written; a garbage frame is a
    // protocol error the same way.
    let node = ServedNode::start(
        "write",
        Limits {
            max_request_bytes: 1024,
            ..Limits::default()
        },
    )
    .await;
    let mut raw = TcpStream::connect(node.resp).await.unwrap();
    raw.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000000\r\n")
        .await
        .unwrap();
    let chunk = vec![b'v'; 64 << 10];
    let mut refused = false;
    for _ in 0..32 {
        if raw.write_all(&chunk).await.is_err() {
            refused = true;
            break;
        }
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("-ERR Protocol error: a request frame is larger than"),
        "{answer:?} (writes refused: {refused})"
    );
    assert_eq!(node.rest_get("k").await, None);

    let mut raw = TcpStream::connect(node.resp).await.unwrap();
    raw.write_all(b"$-7\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), raw.read_to_end(&mut answer)).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("-ERR Protocol error"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
}

#[tokio::test]
async fn a_request_trickled_in_is_cut_off_and_an_idle_connection_is_not() {
    // Proves: a connection that starts a request and does not finish it
    // within the frame timeout (1 s here) is closed with an error and
    // nothing is written, while connections idle for longer than that
    // (one that has sent a command, one that has sent nothing yet) are
    // still served.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut idle = connect(&node).await;
    // A connection that has sent nothing at all yet.
    let mut fresh = TcpStream::connect(node.resp).await.unwrap();
    let mut raw = TcpStream::connect(node.resp).await.unwrap();
    raw.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), raw.read_to_end(&mut answer))
        .await
        .expect("the connection is closed")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("-ERR Protocol error: a request took longer than"),
        "{answer:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(node.rest_get("k").await, None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(cmd::<String>(&mut idle, &["PING"]).await.unwrap(), "PONG");
    fresh.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    let mut pong = [0u8; 7];
    tokio::time::timeout(Duration::from_secs(5), fresh.read_exact(&mut pong))
        .await
        .expect("an answer")
        .unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
}

#[tokio::test]
async fn a_node_with_redis_clients_connected_stops_and_frees_its_ports() {
    // Proves: a node stops with RESP connections open (one idle, one in
    // the middle of a request), ending them, and leaves its RESP port
    // free: a listener binds it again at once.
    let mut node = ServedNode::start("write", Limits::default()).await;
    let mut idle = connect(&node).await;
    assert_eq!(cmd::<String>(&mut idle, &["PING"]).await.unwrap(), "PONG");
    let mut partial = TcpStream::connect(node.resp).await.unwrap();
    partial.write_all(b"*2\r\n$3\r\nGET\r\n").await.unwrap();
    node.stop().await;
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), partial.read_to_end(&mut rest)).await;
    tokio::net::TcpListener::bind(node.resp)
        .await
        .expect("the RESP port is free once the node has stopped");
}

#[tokio::test]
async fn inline_commands_typed_as_text_are_served() {
    // Proves: commands sent as plain text lines, as with nc or telnet
    // (PING, a quoted SET, GET), are answered as Redis answers them, and
    // the value is the one REST reads; unbalanced quotes are a protocol
    // error that closes the connection.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut raw = TcpStream::connect(node.resp).await.unwrap();
    raw.write_all(b"PING\r\nSET greeting \"hello there\"\r\nGET greeting\r\n")
        .await
        .unwrap();
    let want = b"+PONG\r\n+OK\r\n$11\r\nhello there\r\n";
    let mut got = vec![0u8; want.len()];
    tokio::time::timeout(Duration::from_secs(10), raw.read_exact(&mut got))
        .await
        .expect("answers")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    assert_eq!(
        node.rest_get("greeting").await.as_deref(),
        Some("hello there")
    );

    let mut bad = TcpStream::connect(node.resp).await.unwrap();
    bad.write_all(b"SET k \"open\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), bad.read_to_end(&mut answer)).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("-ERR Protocol error: unbalanced quotes"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(node.rest_get("k").await, None);
}
