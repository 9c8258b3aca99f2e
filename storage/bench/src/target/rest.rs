//! Strata over REST (HTTP/1.1 with keep-alive): `PUT`/`GET /v1/kv/{key}` and `GET /v1/kv?start=&end=`.

use std::time::Duration;

use bytes::Bytes;

use super::{ReadConsistency, Target, TargetError};

pub struct RestTarget {
    /// One pool per `conn`, each pointed at one base URL.
    clients: Vec<(reqwest::Client, String)>,
}

#[derive(serde::Deserialize)]
struct ScanBody {
    kvs: Vec<serde_json::Value>,
}

impl RestTarget {
    pub fn new(
        endpoints: &[String],
        connections: usize,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut clients = Vec::with_capacity(connections);
        for i in 0..connections.max(1) {
            let base = endpoints[i % endpoints.len()]
                .trim_end_matches('/')
                .to_string();
            let client = reqwest::Client::builder()
                .timeout(timeout)
                .tcp_nodelay(true)
                .pool_idle_timeout(Duration::from_secs(30))
                .build()?;
            clients.push((client, base));
        }
        Ok(RestTarget { clients })
    }

    fn client(&self, conn: usize) -> &(reqwest::Client, String) {
        &self.clients[conn % self.clients.len()]
    }
}

fn key_str(key: &Bytes) -> &str {
    // Keys come from `KeySpace`, which only makes URL-safe ASCII.
    std::str::from_utf8(key).expect("bench keys are ASCII")
}

fn transport(e: reqwest::Error) -> TargetError {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        "connect"
    } else {
        "transport"
    };
    TargetError::new(kind, e)
}

async fn status_error(resp: reqwest::Response) -> TargetError {
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    TargetError::new(format!("http {}", status.as_u16()), body)
}

/// A write's answer: an error unless 2xx; the body is drained so the
/// connection goes back to the pool.
async fn expect_success(resp: reqwest::Response) -> Result<(), TargetError> {
    if !resp.status().is_success() {
        return Err(status_error(resp).await);
    }
    resp.bytes().await.map_err(transport)?;
    Ok(())
}

impl Target for RestTarget {
    async fn put(&self, conn: usize, key: Bytes, value: Bytes) -> Result<(), TargetError> {
        let (client, base) = self.client(conn);
        let resp = client
            .put(format!("{base}/v1/kv/{}", key_str(&key)))
            .header("content-type", "application/octet-stream")
            .body(value)
            .send()
            .await
            .map_err(transport)?;
        expect_success(resp).await
    }

    async fn get(
        &self,
        conn: usize,
        key: Bytes,
        consistency: ReadConsistency,
    ) -> Result<bool, TargetError> {
        let (client, base) = self.client(conn);
        let consistency = match consistency {
            ReadConsistency::Linearizable => "linearizable",
            ReadConsistency::Stale => "stale",
        };
        let resp = client
            .get(format!(
                "{base}/v1/kv/{}?consistency={consistency}",
                key_str(&key)
            ))
            .send()
            .await
            .map_err(transport)?;
        match resp.status().as_u16() {
            200 => {
                resp.bytes().await.map_err(transport)?;
                Ok(true)
            }
            404 => {
                resp.bytes().await.map_err(transport)?;
                Ok(false)
            }
            _ => Err(status_error(resp).await),
        }
    }

    async fn batch(&self, conn: usize, pairs: Vec<(Bytes, Bytes)>) -> Result<(), TargetError> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let ops: Vec<serde_json::Value> = pairs
            .iter()
            .map(|(k, v)| {
                serde_json::json!({"op": "put", "key": b64.encode(k), "value": b64.encode(v)})
            })
            .collect();
        let (client, base) = self.client(conn);
        let resp = client
            .post(format!("{base}/v1/batch"))
            .json(&serde_json::json!({"ops": ops, "encoding": "base64"}))
            .send()
            .await
            .map_err(transport)?;
        expect_success(resp).await
    }

    async fn scan(
        &self,
        conn: usize,
        start: Bytes,
        end: Bytes,
        limit: u32,
    ) -> Result<usize, TargetError> {
        let (client, base) = self.client(conn);
        let resp = client
            .get(format!(
                "{base}/v1/kv?start={}&end={}&limit={limit}",
                key_str(&start),
                key_str(&end)
            ))
            .send()
            .await
            .map_err(transport)?;
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        let body: ScanBody = resp
            .json()
            .await
            .map_err(|e| TargetError::new("decode", e))?;
        Ok(body.kvs.len())
    }
}
