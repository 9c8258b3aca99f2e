//! `node::run` on a port of its own, in this process: REST and gRPC on the
//! one port, and a clean stop that keeps what was acknowledged.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::kv_client::KvClient;
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, DeleteOp, DeleteRequest, GetRequest, PutOp,
    PutRequest, ScanRequest, StatusRequest, batch_op, scan_request,
};
use strata_server::{NodeConfig, Stop};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

/// A node served on 127.0.0.1 until `stop` is sent.
struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<anyhow::Result<Stop>>,
}

impl Running {
    async fn start(dir: &Path) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut config = NodeConfig::single(1, addr, dir.into());
        config.anonymous_role = "write".parse().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(strata_server::run(listener, config, async move {
            let _ = stopped.await;
        }));
        let mut running = Running { addr, stop, task };
        running.wait_leader().await;
        running
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn wait_leader(&mut self) {
        let http = reqwest::Client::new();
        for _ in 0..500 {
            if self.task.is_finished() {
                panic!(
                    "the node stopped while starting: {:?}",
                    (&mut self.task).await
                );
            }
            if let Ok(r) = http.get(self.url("/health/leader")).send().await
                && r.status() == StatusCode::OK
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the node did not become leader in 5 s");
    }

    async fn channel(&self) -> Channel {
        Channel::from_shared(self.url(""))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    /// Stops the node and returns why `run` returned.
    async fn stop(self) -> Stop {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_and_grpc_share_the_port_and_see_each_others_writes() {
    // Proves: on one port, a REST write is readable over gRPC and the other
    // way round, every KV call works over gRPC, the cluster service reports
    // the node, and a stop request ends `run` with `Stop::Shutdown`.
    let dir = tempfile::tempdir().unwrap();
    let node = Running::start(dir.path()).await;
    let http = reqwest::Client::new();
    let mut kv = KvClient::new(node.channel().await);

    let put = http
        .put(node.url("/v1/kv/from-rest"))
        .body("r")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::OK);
    let got = kv
        .get(GetRequest {
            key: "from-rest".into(),
            consistency: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(got.found);
    assert_eq!(got.value, "r");

    kv.put(PutRequest {
        key: "from-grpc".into(),
        value: "g".into(),
        request_id: String::new(),
        ..PutRequest::default()
    })
    .await
    .unwrap();
    let got = http.get(node.url("/v1/kv/from-grpc")).send().await.unwrap();
    assert_eq!(got.bytes().await.unwrap(), "g");

    let op = |op| BatchOp { op: Some(op) };
    kv.batch(BatchRequest {
        ops: vec![
            op(batch_op::Op::Put(PutOp {
                key: "from-grpc/2".into(),
                value: "2".into(),
                lease: 0,
            })),
            op(batch_op::Op::Delete(DeleteOp {
                key: "from-rest".into(),
            })),
        ],
        request_id: String::new(),
    })
    .await
    .unwrap();
    let cas = kv
        .compare_and_swap(CompareAndSwapRequest {
            key: "from-grpc".into(),
            expected: Some("g".into()),
            value: Some("g2".into()),
            request_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cas.succeeded);
    let deleted = kv
        .delete(DeleteRequest {
            key: "from-grpc/2".into(),
            request_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(deleted.deleted);
    let scan = kv
        .scan(ScanRequest {
            selector: Some(scan_request::Selector::Prefix("from".into())),
            ..ScanRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let keys: Vec<_> = scan.kvs.iter().map(|kv| kv.key.clone()).collect();
    assert_eq!(keys, ["from-grpc"]);
    assert_eq!(scan.kvs[0].value, "g2");

    // Pages over gRPC read the first page's state too, and a token whose
    // state is gone is FAILED_PRECONDITION.
    for k in ["page/a", "page/b"] {
        kv.put(PutRequest {
            key: k.into(),
            value: "old".into(),
            request_id: String::new(),
            ..PutRequest::default()
        })
        .await
        .unwrap();
    }
    let paged = |page_token| ScanRequest {
        selector: Some(scan_request::Selector::Prefix("page/".into())),
        limit: 1,
        page_token,
        ..ScanRequest::default()
    };
    let first = kv
        .scan(paged(Default::default()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(first.kvs[0].key, "page/a");
    kv.put(PutRequest {
        key: "page/b".into(),
        value: "new".into(),
        request_id: String::new(),
        ..PutRequest::default()
    })
    .await
    .unwrap();
    let second = kv
        .scan(paged(first.next_page_token.clone()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (&second.kvs[0].key[..], &second.kvs[0].value[..]),
        (&b"page/b"[..], &b"old"[..])
    );
    assert_eq!(second.header, first.header);
    assert!(second.next_page_token.is_empty());
    let gone = kv.scan(paged(first.next_page_token)).await.unwrap_err();
    assert_eq!(gone.code(), tonic::Code::FailedPrecondition, "{gone:?}");

    let empty_key = kv.put(PutRequest::default()).await.unwrap_err();
    assert_eq!(empty_key.code(), tonic::Code::InvalidArgument);

    let status = ClusterClient::new(node.channel().await)
        .status(StatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!((status.leader_id, status.nodes.len()), (1, 1));

    assert_eq!(node.stop().await, Stop::Shutdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_keeps_what_it_acknowledged() {
    // Proves: after a clean stop, the same data directory starts a node
    // that still holds every acknowledged write.
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let node = Running::start(dir.path()).await;
    for i in 0..20 {
        let put = http
            .put(node.url(&format!("/v1/kv/k{i:02}")))
            .body(format!("v{i}"))
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), StatusCode::OK);
    }
    assert_eq!(node.stop().await, Stop::Shutdown);

    let node = Running::start(dir.path()).await;
    let page: serde_json::Value = http
        .get(node.url("/v1/kv?prefix=k"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["kvs"].as_array().unwrap().len(), 20, "{page}");
    assert_eq!(page["kvs"][7]["value"], "v7");
    assert_eq!(node.stop().await, Stop::Shutdown);
}
