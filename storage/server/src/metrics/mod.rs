//! The node's metrics, in one registry served at `GET /metrics` in the
//! OpenMetrics text format (which Prometheus reads): names start with
//! `strata_`, carry their unit (`_seconds`, `_bytes`) and counters end in
//! `_total`.
//!
//! Counters the node updates as it works live in the families of `api`,
//! of the canary (`canary`) and of the raft peer (`strata_raft::RaftMetrics`); what the engine, the raft
//! status and the process already know is read at scrape time by the
//! collectors in `engine`, `status` and `process`, so no number is kept
//! twice.

mod api;
mod canary;
mod engine;
mod process;
pub mod scrape;
mod status;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use strata_engine::Engine;
use strata_raft::PeerHandle;

pub use api::{ApiMetrics, track};
pub use canary::{CanaryMetrics, OpKind, OpOutcome, WindowVerdict};

/// The content type of [`NodeMetrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The label of `strata_build_info`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
}

/// Every metric of one node.
pub struct NodeMetrics {
    registry: Registry,
    pub api: ApiMetrics,
    pub canary: CanaryMetrics,
}

impl NodeMetrics {
    /// Registers the API families, the peer's raft families, and the
    /// collectors over `engine`, `peer`'s status and this process (with the
    /// free space of `data_dir`).
    pub fn new(engine: Arc<Engine>, peer: PeerHandle, data_dir: PathBuf) -> Self {
        let mut registry = Registry::with_prefix("strata");
        let build = Family::<BuildLabels, Gauge>::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        registry.register(
            "build_info",
            "The node's build: 1, labelled with its version",
            build,
        );
        let api = ApiMetrics::default();
        api.register(registry.sub_registry_with_prefix("api"));
        let canary = CanaryMetrics::default();
        canary.register(registry.sub_registry_with_prefix("canary"));
        let raft = registry.sub_registry_with_prefix("raft");
        peer.metrics().register(raft);
        raft.register_collector(Box::new(status::StatusCollector::new(peer)));
        registry
            .sub_registry_with_prefix("engine")
            .register_collector(Box::new(engine::EngineCollector::new(engine)));
        registry
            .sub_registry_with_prefix("process")
            .register_collector(Box::new(process::ProcessCollector::new(data_dir)));
        NodeMetrics {
            registry,
            api,
            canary,
        }
    }

    /// Every metric, as a scrape's body.
    pub fn encode(&self) -> String {
        let mut text = String::with_capacity(16 << 10);
        // Writing into a String cannot fail; a collector that fails ends
        // its own families early, which the scrape shows.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!(error = %e, "encoding metrics failed");
        }
        text
    }
}
