//! The gateway's limits against abuse, tried the way an attacker would:
//! real Envoy (its config from `gateway/gen_envoy.py`, with limits lowered
//! by its flags) in front of real nodes. A client flooding requests is
//! refused 429 / RESOURCE_EXHAUSTED and what was refused is not applied,
//! while another client is served; connections beyond the cap are closed
//! while open ones are served; a client trickling its headers or its body
//! is cut off, while streams (watch, lease keep-alive) run on.
//!
//! Every client here talks from an address of its own in 127.0.0.0/8
//! (127.0.0.1 is the harness's own), since the gateway keeps one bucket per
//! client address.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use strata_auth::Role;
use strata_client::proto::LeaseKeepAliveRequest;
use strata_client::proto::lease_client::LeaseClient;
use strata_client::{Client, ClientError, Credential, WatchSelector};
use strata_harness::Cluster;
use tonic::service::interceptor::InterceptedService;

const FLOODER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const BYSTANDER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const GRPC_FLOODER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 4));

/// A REST client talking from `from`, with `token`.
fn client_from(from: IpAddr, token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    reqwest::Client::builder()
        .local_address(from)
        .default_headers(headers)
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap()
}

fn gateway_addr(c: &Cluster) -> SocketAddr {
    c.gateway_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap()
}

/// A TCP connection to the gateway from `from`.
fn connect_from(c: &Cluster, from: IpAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&SocketAddr::new(from, 0).into()).unwrap();
    socket.connect(&gateway_addr(c).into()).unwrap();
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// Everything the gateway sends on `stream` until it closes it (or the
/// read timeout), and how long after `since` its answer began (when it
/// closed, without one). After an answer that closes the connection Envoy
/// waits for the client to close first, for up to a second.
fn read_until_closed(stream: &mut TcpStream, since: Instant) -> (String, Duration) {
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let mut answered = None;
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => {
                let when = answered.unwrap_or_else(|| since.elapsed());
                return (String::from_utf8_lossy(&text).into(), when);
            }
            Ok(n) => {
                answered.get_or_insert_with(|| since.elapsed());
                text.extend_from_slice(&buf[..n]);
            }
        }
    }
}

/// Sends `at_once`, then `slowly` a byte every `pause`, on `stream`, until
/// the gateway closes it; answers what it sent back and how long after the
/// first byte it answered.
fn trickle(
    mut stream: TcpStream,
    at_once: Vec<u8>,
    slowly: Vec<u8>,
    pause: Duration,
) -> tokio::task::JoinHandle<(String, Duration)> {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut writer = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            if writer.write_all(&at_once).is_err() {
                return;
            }
            for byte in slowly {
                if writer.write_all(&[byte]).is_err() {
                    return;
                }
                std::thread::sleep(pause);
            }
        });
        read_until_closed(&mut stream, started)
    })
}

/// One HTTP/1.1 request on an open connection; the status of its answer,
/// or None when the connection was closed first.
fn request_on(stream: &mut TcpStream, path: &str) -> Option<u16> {
    let req = format!("GET {path} HTTP/1.1\r\nhost: strata\r\n\r\n");
    stream.write_all(req.as_bytes()).ok()?;
    let mut buf = [0u8; 8192];
    let n = stream.read(&mut buf).ok()?;
    let head = String::from_utf8_lossy(&buf[..n]).to_string();
    head.split_whitespace().nth(1)?.parse().ok()
}

/// The keys under `prefix`, read through the gateway by the harness.
async fn keys_under(c: &Cluster, prefix: &str) -> BTreeSet<String> {
    let body: Value = c
        .http()
        .get(format!("{}/v1/kv", c.gateway_url()))
        .query(&[("prefix", prefix), ("keys_only", "true"), ("limit", "1000")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["kvs"]
        .as_array()
        .unwrap_or_else(|| panic!("a scan: {body}"))
        .iter()
        .map(|kv| kv["key"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_client_is_refused_429_and_its_refused_writes_are_not_applied() {
    // Proves, with a limit of 5 requests a second per client address: 200
    // writes sent by one client as fast as it can, each claiming another
    // address in x-forwarded-for, are partly refused 429
    // RATE_LIMITED in the API's error shape with retry-after, by the
    // gateway; every write answered 200 exists afterwards and none refused
    // 429 does (read back);
    // a second client, flooding nothing, is served meanwhile; and a gRPC
    // client over its rate gets RESOURCE_EXHAUSTED marked retryable.
    let c = Cluster::start_with_gateway_args(3, &["--rate-limit-rps", "5"])
        .await
        .unwrap();
    let gw = c.gateway_url();
    let writer = c.token(Role::Write);
    let flooder = client_from(FLOODER, &writer);
    let bystander = client_from(BYSTANDER, &writer);

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (flooder, gw) = (flooder.clone(), gw.clone());
        tasks.spawn(async move {
            let mut answers = Vec::new();
            for i in 0..25 {
                let key = format!("flood/{worker}-{i}");
                // Each request claims to come from another address: the
                // gateway keys its buckets on the TCP peer, not on this.
                let resp = flooder
                    .put(format!("{gw}/v1/kv/{key}"))
                    .header("x-forwarded-for", format!("10.0.{worker}.{i}"))
                    .body("v")
                    .send()
                    .await
                    .unwrap();
                let status = resp.status();
                let headers = resp.headers().clone();
                let body: Value = resp.json().await.unwrap_or(Value::Null);
                answers.push((key, status, headers, body));
            }
            answers
        });
    }
    // Meanwhile, the other client reads and writes as usual, within its own
    // rate (a request every 250 ms, under 5 a second): never refused 429
    // (a busy node's own 503 / 504 is retried, as any client would).
    let pace = Duration::from_millis(250);
    for i in 0..3 {
        let url = format!("{gw}/v1/kv/bystander/{i}");
        let mut tries = 0;
        loop {
            tokio::time::sleep(pace).await;
            let put = bystander.put(&url).body("v").send().await.unwrap();
            let status = put.status();
            let body = put.text().await.unwrap();
            assert_ne!(
                status,
                StatusCode::TOO_MANY_REQUESTS,
                "the bystander is refused: {body}"
            );
            if status == StatusCode::OK {
                break;
            }
            tries += 1;
            assert!(tries < 10, "the bystander is not served: {status} {body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(pace).await;
        let get = bystander.get(&url).send().await.unwrap();
        assert_eq!(get.status(), StatusCode::OK);
    }
    let (mut applied, mut refused) = (BTreeSet::new(), BTreeSet::new());
    let (mut ok, mut limited) = (0, 0);
    while let Some(answers) = tasks.join_next().await {
        for (key, status, headers, body) in answers.unwrap() {
            match status {
                StatusCode::OK => {
                    ok += 1;
                    applied.insert(key);
                }
                StatusCode::TOO_MANY_REQUESTS => {
                    limited += 1;
                    refused.insert(key);
                    assert_eq!(body["code"], "RATE_LIMITED", "{body}");
                    assert!(
                        body["message"].as_str().unwrap().starts_with("gateway:"),
                        "{body}"
                    );
                    assert_eq!(headers["retry-after"], "1");
                    assert_eq!(headers["x-strata-retryable"], "true");
                    assert_eq!(headers["retry-after-ms"], "1000");
                }
                // A node's own answer to a write the gateway let through:
                // on a busy host a leader can lose its lease mid-flood, and
                // its writes' outcome is then unknown (504), or they were not
                // applied (503). Neither is a rate-limit refusal.
                StatusCode::GATEWAY_TIMEOUT | StatusCode::SERVICE_UNAVAILABLE
                    if !body["message"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("gateway:") =>
                {
                    eprintln!("{key}: a node answered {status}: {body}");
                }
                other => panic!("{key}: {other} {body}"),
            }
        }
    }
    let took = started.elapsed();
    eprintln!(
        "flood of 200 writes from one client in {took:?}: {ok} served, {limited} refused 429 \
         ({:.0} % refused)",
        100.0 * limited as f64 / 200.0
    );
    assert!(limited > 0, "no write was refused");
    // The bucket holds 5 and gains 5 a second.
    let allowed = 5.0 + 5.0 * took.as_secs_f64();
    assert!(
        (ok as f64) <= allowed + 1.0,
        "{ok} served in {took:?}, over the limit"
    );

    let written = keys_under(&c, "flood/").await;
    assert!(
        applied.is_subset(&written),
        "a write served is missing: {:?}",
        applied.difference(&written).collect::<Vec<_>>()
    );
    assert!(
        refused.is_disjoint(&written),
        "writes refused 429 were applied: {:?}",
        refused.intersection(&written).collect::<Vec<_>>()
    );

    // gRPC: the same limit, told as RESOURCE_EXHAUSTED, which the Rust
    // client counts as retryable (nothing applied).
    let channel = tonic::transport::Endpoint::from_shared(gw.clone())
        .unwrap()
        .local_address(Some(GRPC_FLOODER))
        .connect()
        .await
        .unwrap();
    let grpc = Client::from_channel(channel).with_token(&writer).unwrap();
    let mut exhausted = None;
    for i in 0..30 {
        match grpc.put(format!("grpc-flood/{i}"), "v").await {
            Ok(_) => {}
            Err(e @ ClientError::Status(_)) if e.is_retryable() => {
                let ClientError::Status(s) = e else {
                    unreachable!()
                };
                assert_eq!(s.code(), tonic::Code::ResourceExhausted, "{s:?}");
                exhausted = Some((i, s));
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let (i, status) = exhausted.expect("30 quick gRPC writes are not all served");
    assert_eq!(
        status
            .metadata()
            .get("x-strata-retryable")
            .map(|v| v.to_str().unwrap()),
        Some("true"),
        "{status:?}"
    );
    assert!(status.message().contains("gateway:"), "{status:?}");
    eprintln!("gRPC write {i} refused: {status:?}");
    let written = keys_under(&c, "grpc-flood/").await;
    assert_eq!(written.len(), i, "the refused gRPC write was applied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_are_closed_while_open_ones_are_served() {
    // Proves, with a cap of 12 client connections: opening connections
    // until the gateway closes one, the one over the cap gets no answer,
    // and every connection opened before it is still served afterwards;
    // once one is closed a new one is served again.
    let c = Cluster::start_with_gateway_args(3, &["--max-connections", "12"])
        .await
        .unwrap();
    let mut open = Vec::new();
    let refused = loop {
        assert!(open.len() <= 12, "more than 12 connections were served");
        let mut stream = connect_from(&c, FLOODER);
        match request_on(&mut stream, "/health/live") {
            Some(200) => open.push(stream),
            Some(other) => panic!("answered {other}"),
            None => break open.len(),
        }
    };
    eprintln!("the gateway served {refused} connections and closed the next one");
    assert!(
        refused > 0 && refused <= 12,
        "{refused} connections served before one was closed"
    );
    for stream in &mut open {
        assert_eq!(request_on(stream, "/health/live"), Some(200));
    }
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = connect_from(&c, FLOODER);
    assert_eq!(request_on(&mut again, "/health/live"), Some(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_and_slow_bodies_are_cut_off_while_streams_run_on() {
    // Proves, with 2 s for a request's headers and 4 s for a whole request:
    // a client sending its headers a byte a second is cut off with 408
    // within 2 s (and a margin); one trickling a write's body is cut off
    // within 4 s and its write is not applied; normal clients are served
    // meanwhile; and a REST watch, a gRPC watch and a lease keep-alive
    // stream opened before them still deliver after 8 s, twice the longest
    // timeout.
    let c = Cluster::start_with_gateway_args(
        3,
        &[
            "--request-headers-timeout-s",
            "2",
            "--request-timeout-s",
            "4",
        ],
    )
    .await
    .unwrap();
    let gw = c.gateway_url();
    let writer = c.token(Role::Write);
    let admin = c.admin_client().await.unwrap();

    // The streams, opened first.
    let mut sse = c
        .http()
        .get(format!("{gw}/v1/watch"))
        .query(&[("prefix", "watched/")])
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), StatusCode::OK);
    let mut grpc_watch = admin.watch(
        WatchSelector::Prefix(b"watched/".to_vec()),
        0,
        Some(Duration::from_millis(500)),
    );
    // The stream opens with the first message (a progress message here).
    grpc_watch.next().await.unwrap();
    let lease = admin
        .lease_grant(Duration::from_secs(30), 0)
        .await
        .unwrap()
        .id;
    let channel = tonic::transport::Endpoint::from_shared(gw.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let credential = Credential::bearer(&writer).unwrap();
    let mut leases = LeaseClient::new(InterceptedService::new(channel, credential));
    let (keep_tx, keep_rx) = tokio::sync::mpsc::channel(4);
    let mut keep_answers = leases
        .keep_alive(tokio_stream::wrappers::ReceiverStream::new(keep_rx))
        .await
        .unwrap()
        .into_inner();

    // Slow headers, a byte a second.
    let head =
        "GET /v1/kv/anything HTTP/1.1\r\nhost: strata\r\nx-padding: aaaaaaaaaaaaaaaa\r\n\r\n";
    let slow_headers = trickle(
        connect_from(&c, FLOODER),
        Vec::new(),
        head.into(),
        Duration::from_secs(1),
    );
    // A slow body: a write of 64 bytes, sent a byte every 250 ms.
    let head = format!(
        "PUT /v1/kv/trickled HTTP/1.1\r\nhost: strata\r\nauthorization: Bearer {writer}\r\n\
         content-length: 64\r\n\r\n"
    );
    let slow_body = trickle(
        connect_from(&c, BYSTANDER),
        head.into_bytes(),
        vec![b'x'; 64],
        Duration::from_millis(250),
    );
    // Meanwhile, normal clients.
    for i in 0..10 {
        c.put_until_ok(&format!("normal/{i}"), "v", Duration::from_secs(5))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let (answer, cut_after) = slow_headers.await.unwrap();
    eprintln!("slow headers cut off after {cut_after:?}: {answer:?}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        cut_after >= Duration::from_millis(1900) && cut_after < Duration::from_millis(3000),
        "cut off after {cut_after:?}"
    );
    let (answer, cut_after) = slow_body.await.unwrap();
    eprintln!("slow body cut off after {cut_after:?}: {answer:?}");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    assert!(
        cut_after >= Duration::from_millis(3900) && cut_after < Duration::from_millis(5000),
        "cut off after {cut_after:?}"
    );
    let trickled = c
        .http()
        .get(format!("{gw}/v1/kv/trickled"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        trickled.status(),
        StatusCode::NOT_FOUND,
        "the cut-off write was applied"
    );

    // The streams, well past every timeout.
    tokio::time::sleep(Duration::from_secs(8)).await;
    admin.put("watched/k", "after").await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), async {
        let mut seen = String::new();
        while let Some(chunk) = sse.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("watched/k") {
                return seen;
            }
        }
        panic!("the REST watch ended: {seen}");
    })
    .await
    .expect("the REST watch delivers the put");
    assert!(event.contains("watched/k"));
    let changes = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let batch = grpc_watch.next().await.expect("the gRPC watch");
            if batch.events.iter().any(|e| e.key.as_ref() == b"watched/k") {
                return batch.events;
            }
        }
    })
    .await
    .expect("the gRPC watch delivers the put");
    assert!(!changes.is_empty());
    assert_eq!(
        grpc_watch.resumed(),
        0,
        "the gRPC watch was cut and resumed"
    );
    keep_tx
        .send(LeaseKeepAliveRequest { id: lease })
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), keep_answers.message())
        .await
        .expect("a keep-alive answer")
        .expect("the keep-alive stream is still open")
        .expect("an answer");
    assert_eq!(answer.ttl_ms, 30_000);
}
