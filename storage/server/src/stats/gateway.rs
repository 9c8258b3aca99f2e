//! What the gateway answered, for the stats: with `--gateway-admin`, the
//! node that gathers the stats also reads Envoy's own counters from its
//! admin interface (`/stats/prometheus`, the page Prometheus scrapes), so
//! the console can line up the 503 and 504 answers of a failover with the
//! raft events. The counter is the gateway's own count of the failed
//! answers it sent its clients (`gateway/answers.py`): one per answer, with
//! the status the client got (after Envoy's local reply mappers) and its
//! gRPC status, for requests routed to the nodes.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::metrics::scrape::{Scrape, ScrapeError};
use crate::rest::model::stats::{GatewayResponses, GatewayStats};

/// How long the gatherer waits for Envoy's admin page.
const TIMEOUT: Duration = Duration::from_millis(400);
/// The clusters that route to the storage nodes (`gateway/gen_envoy.py`):
/// the aggregate `nodes` (the leader, else any live node), `nodes_leader`
/// and `nodes_any`. An answer is tagged with the cluster its route names.
const NODE_CLUSTERS: &str = "nodes";

fn is_node_cluster(name: &str) -> bool {
    name == NODE_CLUSTERS
        || name
            .strip_prefix(NODE_CLUSTERS)
            .is_some_and(|rest| rest.starts_with('_'))
}
/// The gateway's counter of failed answers (`gateway/answers.py`).
const ANSWERS: &str = "envoy_gateway_answers_answered";

/// The HTTP status a gRPC status stands for in the API's contract
/// (`docs/api-rest.md`): UNAVAILABLE is 503, DEADLINE_EXCEEDED (outcome
/// unknown) 504, INTERNAL and UNKNOWN 500.
fn status_of_grpc(grpc: &str) -> Option<&'static str> {
    match grpc {
        "14" => Some("503"),
        "4" => Some("504"),
        "13" | "2" => Some("500"),
        _ => None,
    }
}

/// Why the gateway's counters could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("the gateway's admin interface at {admin} did not answer: {source}")]
    Unreachable {
        admin: String,
        source: reqwest::Error,
    },
    #[error("the gateway's admin interface answered HTTP {status}")]
    Status { status: u16 },
    #[error("the gateway's counters are not readable: {0}")]
    Unreadable(#[from] ScrapeError),
}

/// Reads the gateway's answers to requests routed to the nodes from
/// Envoy's admin interface at `admin` (`host:port`).
pub async fn scrape(http: &reqwest::Client, admin: &str) -> Result<GatewayStats, GatewayError> {
    let url = format!("http://{admin}/stats/prometheus?usedonly&filter=%5Egateway_answers%5C.");
    let unreachable = |source| GatewayError::Unreachable {
        admin: admin.to_string(),
        source,
    };
    let response = http
        .get(&url)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(unreachable)?;
    if !response.status().is_success() {
        return Err(GatewayError::Status {
            status: response.status().as_u16(),
        });
    }
    let text = response.text().await.map_err(unreachable)?;
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    Ok(read(&Scrape::parse(&text)?, at_ms))
}

/// The failed answers by status in Envoy's scrape, for the node clusters:
/// a gRPC answer under the status its gRPC status stands for.
pub fn read(scrape: &Scrape, at_ms: u64) -> GatewayStats {
    let mut by_code: BTreeMap<String, u64> = BTreeMap::new();
    for family in scrape.families.iter().filter(|f| f.name == ANSWERS) {
        for s in &family.samples {
            if !s.suffix.is_empty() || !is_node_cluster(s.label("cluster")) {
                continue;
            }
            let code = match s.label("grpc") {
                "" | "-" => s.label("code"),
                grpc => match status_of_grpc(grpc) {
                    Some(code) => code,
                    None => continue,
                },
            };
            *by_code.entry(code.to_string()).or_default() += s.value.max(0.0) as u64;
        }
    }
    GatewayStats {
        at_ms,
        error: String::new(),
        responses: by_code
            .into_iter()
            .map(|(code, count)| GatewayResponses { code, count })
            .collect(),
    }
}

/// The stats' gateway part when its counters could not be read.
pub fn unreadable(error: &GatewayError) -> GatewayStats {
    GatewayStats {
        at_ms: 0,
        error: error.to_string(),
        responses: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_summed_by_status_over_the_node_clusters_only() {
        // Proves: the node clusters' failed answers (the aggregate and both
        // of its parts) add up per status whatever their flags, a gRPC
        // answer counts under the status its gRPC status stands for (an
        // UNAVAILABLE is a 503 whose HTTP status was 200), other clusters
        // (k6's, a name that only starts alike) and other families are left
        // out, and Envoy's Prometheus text (counters without `_total`) is
        // read.
        let text = r#"# TYPE envoy_gateway_answers_answered counter
envoy_gateway_answers_answered{code="503",grpc="",flags="-",cluster="nodes_leader"} 3
envoy_gateway_answers_answered{code="503",grpc="",flags="UH",cluster="nodes"} 4
envoy_gateway_answers_answered{code="504",grpc="",flags="UC",cluster="nodes_any"} 1
envoy_gateway_answers_answered{code="200",grpc="14",flags="-",cluster="nodes"} 2
envoy_gateway_answers_answered{code="200",grpc="4",flags="URX,UF",cluster="nodes"} 5
envoy_gateway_answers_answered{code="200",grpc="7",flags="-",cluster="nodes"} 6
envoy_gateway_answers_answered{code="503",grpc="",flags="-",cluster="nodesx"} 7
envoy_gateway_answers_answered{code="503",grpc="",flags="UF",cluster="k6"} 9
# TYPE envoy_cluster_upstream_rq counter
envoy_cluster_upstream_rq{envoy_response_code="503",envoy_cluster_name="nodes_leader"} 11
"#;
        let stats = read(&Scrape::parse(text).unwrap(), 7);
        let codes: Vec<(&str, u64)> = stats
            .responses
            .iter()
            .map(|r| (r.code.as_str(), r.count))
            .collect();
        assert_eq!(codes, [("503", 9), ("504", 6)]);
        assert_eq!(stats.at_ms, 7);
    }

    #[tokio::test]
    async fn an_admin_address_that_does_not_answer_is_an_error_not_zeros() {
        // Proves a gateway that cannot be reached is reported as such, so
        // the console never shows "no errors" for "no numbers".
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let admin = listener.local_addr().unwrap().to_string();
        drop(listener);
        let err = scrape(&reqwest::Client::new(), &admin).await.unwrap_err();
        assert!(matches!(err, GatewayError::Unreachable { .. }), "{err}");
        assert!(!unreadable(&err).error.is_empty());
    }
}
