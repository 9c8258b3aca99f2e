//! The memcached text-protocol listener (`--memcache-listen`) of a node
//! served in this process, driven by the protocol's own bytes on a socket
//! (the suite drives it with memcached's tools and a client library too:
//! `storage/harness/tests/memcache.rs`).

use std::time::Duration;

use strata_auth::Role;
use strata_server::config::Limits;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use crate::served::ServedNode;

/// One memcached connection: requests out, reply lines in.
struct Conn {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Conn {
    async fn open(node: &ServedNode) -> Conn {
        let (read, writer) = TcpStream::connect(node.memcache)
            .await
            .unwrap()
            .into_split();
        Conn {
            reader: BufReader::new(read),
            writer,
        }
    }

    async fn send(&mut self, request: &str) {
        self.writer.write_all(request.as_bytes()).await.unwrap();
    }

    /// The next reply line, without its end.
    async fn line(&mut self) -> String {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line))
            .await
            .expect("a reply within 10 s")
            .unwrap();
        assert!(n > 0, "the connection closed");
        line.trim_end_matches("\r\n").to_string()
    }

    /// Sends `request` and reads one reply line.
    async fn ask(&mut self, request: &str) -> String {
        self.send(request).await;
        self.line().await
    }

    /// Sends a retrieval and reads its reply up to `END`, lines joined by
    /// `|`.
    async fn retrieve(&mut self, request: &str) -> String {
        self.send(request).await;
        let mut lines = Vec::new();
        loop {
            let line = self.line().await;
            if line == "END" {
                return lines.join("|");
            }
            lines.push(line);
        }
    }

    /// Everything until the node closes the connection.
    async fn rest(mut self) -> String {
        let mut out = Vec::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(10), self.reader.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }
}

async fn rest_put(node: &ServedNode, key: &str, value: &str) {
    reqwest::Client::new()
        .put(format!("http://{}/v1/kv/{key}", node.http))
        .body(value.to_string())
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
}

/// The key's mod index and lease, as REST gives them.
async fn rest_versions(node: &ServedNode, key: &str) -> (u64, u64) {
    let r: serde_json::Value = reqwest::Client::new()
        .get(format!("http://{}/v1/kv/{key}", node.http))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        r["mod_index"].as_u64().unwrap(),
        r["lease"].as_u64().unwrap_or(0),
    )
}

#[tokio::test]
async fn memcached_commands_read_and_write_the_same_keys_as_rest() {
    // Proves: set, get, gets, add, replace, append, prepend, incr, decr,
    // cas and delete answer as memcached does, over the keys REST reads
    // and writes: one store behind both front ends, a `gets` unique being
    // the key's mod index.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut c = Conn::open(&node).await;
    assert_eq!(c.ask("set a 0 0 5\r\nhello\r\n").await, "STORED");
    assert_eq!(node.rest_get("a").await.as_deref(), Some("hello"));
    rest_put(&node, "from-rest", "r").await;
    assert_eq!(
        c.retrieve("get from-rest none a\r\n").await,
        "VALUE from-rest 0 1|r|VALUE a 0 5|hello"
    );
    let (mod_index, _) = rest_versions(&node, "a").await;
    assert_eq!(
        c.retrieve("gets a\r\n").await,
        format!("VALUE a 0 5 {mod_index}|hello")
    );

    assert_eq!(c.ask("add a 0 0 1\r\nx\r\n").await, "NOT_STORED");
    assert_eq!(c.ask("add b 0 0 1\r\nx\r\n").await, "STORED");
    assert_eq!(c.ask("replace none 0 0 1\r\nx\r\n").await, "NOT_STORED");
    assert_eq!(c.ask("replace b 0 0 1\r\ny\r\n").await, "STORED");
    assert_eq!(c.ask("append a 0 0 1\r\n!\r\n").await, "STORED");
    assert_eq!(c.ask("prepend a 0 0 1\r\n>\r\n").await, "STORED");
    assert_eq!(c.ask("append none 0 0 1\r\n!\r\n").await, "NOT_STORED");
    assert_eq!(node.rest_get("a").await.as_deref(), Some(">hello!"));
    assert_eq!(node.rest_get("b").await.as_deref(), Some("y"));

    assert_eq!(c.ask("set n 0 0 2\r\n10\r\n").await, "STORED");
    assert_eq!(c.ask("incr n 5\r\n").await, "15");
    assert_eq!(c.ask("decr n 100\r\n").await, "0");
    assert_eq!(c.ask("incr none 1\r\n").await, "NOT_FOUND");
    assert!(
        c.ask("incr a 1\r\n")
            .await
            .starts_with("CLIENT_ERROR INVALID_ARGUMENT cannot increment")
    );
    assert_eq!(node.rest_get("n").await.as_deref(), Some("0"));

    let (unique, _) = rest_versions(&node, "b").await;
    assert_eq!(
        c.ask(&format!("cas b 0 0 1 {}\r\nz\r\n", unique + 1)).await,
        "EXISTS"
    );
    assert_eq!(
        c.ask(&format!("cas b 0 0 1 {unique}\r\nz\r\n")).await,
        "STORED"
    );
    assert_eq!(
        c.ask(&format!("cas b 0 0 1 {unique}\r\nw\r\n")).await,
        "EXISTS",
        "the unique is spent once the key changed"
    );
    assert_eq!(c.ask("cas none 0 0 1 1\r\nz\r\n").await, "NOT_FOUND");
    assert_eq!(node.rest_get("b").await.as_deref(), Some("z"));

    assert_eq!(c.ask("delete b\r\n").await, "DELETED");
    assert_eq!(c.ask("delete b\r\n").await, "NOT_FOUND");
    assert_eq!(node.rest_get("b").await, None);
    assert_eq!(
        c.ask("version\r\n").await,
        format!("VERSION {}", env!("CARGO_PKG_VERSION"))
    );
    let stats = c.retrieve("stats\r\n").await;
    for stat in [
        "STAT cmd_get 4",
        "STAT cas_hits 1",
        "STAT cas_badval 2",
        "STAT cas_misses 1",
    ] {
        assert!(stats.split('|').any(|l| l == stat), "{stat} in {stats}");
    }
    assert!(stats.contains("STAT strata_raft_role leader"), "{stats}");
}

#[tokio::test]
async fn noreply_requests_are_applied_and_answered_with_nothing() {
    // Proves: pipelined storage requests with noreply apply in order and
    // write no reply; the first reply on the connection is the get's.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut c = Conn::open(&node).await;
    let got = c
        .retrieve(
            "set k 0 0 1 noreply\r\n1\r\nappend k 0 0 1 noreply\r\n2\r\nincr k 10 noreply\r\n\
             set gone 0 0 1 noreply\r\nx\r\ndelete gone noreply\r\nget k gone\r\n",
        )
        .await;
    assert_eq!(got, "VALUE k 0 2|22");
}

#[tokio::test]
async fn an_expiry_time_is_a_lease_and_one_already_past_deletes() {
    // Proves: a set with an expiry time puts the key under a lease (REST
    // shows it) and the key is gone once it passed; touch gives a key a
    // new one; a store whose expiry time has passed (negative, as
    // memcached clients send to expire a key) leaves the key absent.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut c = Conn::open(&node).await;
    assert_eq!(c.ask("set brief 0 1 1\r\nv\r\n").await, "STORED");
    let (_, lease) = rest_versions(&node, "brief").await;
    assert_ne!(lease, 0, "the key is under a lease");
    assert_eq!(c.ask("set kept 0 0 1\r\nv\r\n").await, "STORED");
    assert_eq!(c.ask("touch kept 1\r\n").await, "TOUCHED");
    assert_ne!(rest_versions(&node, "kept").await.1, 0);
    assert_eq!(c.ask("touch none 1\r\n").await, "NOT_FOUND");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while node.rest_get("brief").await.is_some() || node.rest_get("kept").await.is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the keys outlived their 1 s expiry by 9 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(c.retrieve("get brief kept\r\n").await, "");

    assert_eq!(c.ask("set old 0 0 1\r\nv\r\n").await, "STORED");
    assert_eq!(c.ask("set old 0 -1 1\r\nv\r\n").await, "STORED");
    assert_eq!(node.rest_get("old").await, None);
    assert_eq!(c.ask("add old 0 -1 1\r\nv\r\n").await, "STORED");
    assert_eq!(node.rest_get("old").await, None);
}

#[tokio::test]
async fn a_closed_node_takes_memcached_sign_in_and_keeps_roles() {
    // Proves: on a node whose anonymous role may do nothing, a connection
    // is refused everything until it signs in with memcached's text
    // protocol authentication (a set whose value is "<user> <token>"); a
    // wrong token is refused; a read token reads and may not write, and
    // nothing is written by the refused requests.
    let node = ServedNode::start("none", Limits::default()).await;
    let mut c = Conn::open(&node).await;
    assert_eq!(c.ask("get k\r\n").await, "CLIENT_ERROR unauthenticated");
    assert_eq!(
        c.ask("set k 0 0 9\r\nuser nope\r\n").await,
        "CLIENT_ERROR authentication failure"
    );
    let read = node.token(Role::Read);
    let sign_in = format!("user {read}");
    assert_eq!(
        c.ask(&format!("set auth 0 0 {}\r\n{sign_in}\r\n", sign_in.len()))
            .await,
        "STORED"
    );
    assert_eq!(c.retrieve("get k\r\n").await, "");
    let refused = c.ask("set k 0 0 1\r\nv\r\n").await;
    assert!(
        refused.starts_with("CLIENT_ERROR PERMISSION_DENIED"),
        "{refused}"
    );

    let mut w = Conn::open(&node).await;
    let write = node.token(Role::Write);
    let sign_in = format!("app {write}");
    assert_eq!(
        w.ask(&format!("set auth 0 0 {}\r\n{sign_in}\r\n", sign_in.len()))
            .await,
        "STORED"
    );
    assert_eq!(w.ask("set k 0 0 1\r\nv\r\n").await, "STORED");
    assert_eq!(c.retrieve("get k auth\r\n").await, "VALUE k 0 1|v");
}

#[tokio::test]
async fn what_the_node_does_not_keep_is_refused_and_changes_nothing() {
    // Proves: flags other than 0 (the node keeps values, not flags) and
    // flush_all (it would delete every key) are refused with a clear
    // error, unknown commands get ERROR, and nothing changes.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut c = Conn::open(&node).await;
    assert_eq!(c.ask("set k 0 0 1\r\nv\r\n").await, "STORED");
    let flags = c.ask("set k 3 0 1\r\nw\r\n").await;
    assert!(
        flags.starts_with("CLIENT_ERROR INVALID_ARGUMENT flags 3 are not kept"),
        "{flags}"
    );
    let flush = c.ask("flush_all\r\n").await;
    assert!(
        flush.starts_with("CLIENT_ERROR METHOD_NOT_ALLOWED flush_all"),
        "{flush}"
    );
    assert_eq!(c.ask("frobnicate\r\n").await, "ERROR");
    assert_eq!(node.rest_get("k").await.as_deref(), Some("v"));
}

#[tokio::test]
async fn a_value_over_the_limit_is_refused_and_the_connection_reads_on() {
    // Proves: a set announcing more than the node's largest value gets
    // memcached's "object too large" once the value has gone by, nothing
    // is written, and the next request on the connection is served; a
    // data block that does not end where announced is a bad chunk.
    let node = ServedNode::start(
        "write",
        Limits {
            max_value_bytes: 1024,
            ..Limits::default()
        },
    )
    .await;
    let mut c = Conn::open(&node).await;
    let big = "v".repeat(100_000);
    let refused = c
        .ask(&format!("set k 0 0 {}\r\n{big}\r\n", big.len()))
        .await;
    assert!(
        refused.starts_with("SERVER_ERROR object too large for cache"),
        "{refused}"
    );
    assert_eq!(
        c.ask("set k 0 0 2\r\nabcd\r\n").await,
        "CLIENT_ERROR bad data chunk"
    );
    // What followed the announced two bytes is read as a line, as
    // memcached reads it.
    assert_eq!(c.line().await, "ERROR");
    assert_eq!(node.rest_get("k").await, None);
    assert_eq!(c.ask("set k 0 0 2\r\nok\r\n").await, "STORED");
}

#[tokio::test]
async fn a_request_trickled_in_or_without_end_closes_the_connection() {
    // Proves: a request not whole within the frame timeout (1 s here)
    // closes its connection with an error and writes nothing, while a
    // connection idle for longer is served; a line with no end within
    // the limit closes its connection too.
    let node = ServedNode::start("write", Limits::default()).await;
    let mut idle = Conn::open(&node).await;
    let mut slow = Conn::open(&node).await;
    slow.send("set k 0 0 5\r\nva").await;
    let started = std::time::Instant::now();
    let answer = slow.rest().await;
    assert!(
        answer.starts_with("CLIENT_ERROR a request took longer than"),
        "{answer:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(node.rest_get("k").await, None);

    let mut endless = Conn::open(&node).await;
    endless.send(&"g".repeat(100_000)).await;
    let answer = endless.rest().await;
    assert!(
        answer.starts_with("CLIENT_ERROR line too long"),
        "{answer:?}"
    );
    let version = idle.ask("version\r\n").await;
    assert!(version.starts_with("VERSION "), "{version}");
}

#[tokio::test]
async fn a_node_with_memcached_clients_connected_stops_and_frees_its_port() {
    // Proves: a node stops with memcached connections open (one idle, one
    // in the middle of a request), ending them, and leaves its memcached
    // port free.
    let mut node = ServedNode::start("write", Limits::default()).await;
    let mut idle = Conn::open(&node).await;
    assert_eq!(idle.ask("set k 0 0 1\r\nv\r\n").await, "STORED");
    let mut partial = Conn::open(&node).await;
    partial.send("set k 0 0 5\r\nv").await;
    node.stop().await;
    let _ = partial.rest().await;
    tokio::net::TcpListener::bind(node.memcache)
        .await
        .expect("the memcached port is free once the node has stopped");
}

#[tokio::test]
async fn connections_past_the_cap_are_told_so_and_closed() {
    // Proves: with --memcache-max-connections 2, a third connection is
    // answered memcached's "Too many open connections" and closed while
    // the two are served; once one closes, a new connection is served;
    // stats counts the refusal. The same for RESP with Redis's words.
    let node = ServedNode::start_configured("write", Limits::default(), |c| {
        c.memcache_max_connections = 2;
        c.resp_max_connections = 1;
    })
    .await;
    let mut first = Conn::open(&node).await;
    let mut second = Conn::open(&node).await;
    assert_eq!(first.ask("set k 0 0 1\r\nv\r\n").await, "STORED");
    assert_eq!(second.retrieve("get k\r\n").await, "VALUE k 0 1|v");
    let third = Conn::open(&node).await;
    assert_eq!(
        third.rest().await,
        "SERVER_ERROR Too many open connections\r\n"
    );
    drop(second);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut again = loop {
        let mut c = Conn::open(&node).await;
        c.send("version\r\n").await;
        let mut line = String::new();
        let _ = c.reader.read_line(&mut line).await;
        if line.starts_with("VERSION") {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no connection served 10 s after one closed: {line:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let stats = again.retrieve("stats\r\n").await;
    assert!(stats.contains("STAT curr_connections 2"), "{stats}");
    assert!(!stats.contains("STAT rejected_connections 0"), "{stats}");
    drop(first);

    let mut redis = TcpStream::connect(node.resp).await.unwrap();
    redis.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    let mut pong = [0u8; 7];
    redis.read_exact(&mut pong).await.unwrap();
    let mut over = TcpStream::connect(node.resp).await.unwrap();
    let mut refusal = String::new();
    tokio::time::timeout(Duration::from_secs(10), over.read_to_string(&mut refusal))
        .await
        .expect("closed")
        .unwrap();
    assert_eq!(refusal, "-ERR max number of clients reached\r\n");
}
