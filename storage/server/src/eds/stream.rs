//! One EDS stream's side of the xDS protocol (state of the world): what
//! the client subscribed to, what was last sent, and what is owed next.
//!
//! Each response carries the endpoints' version and a nonce of its own.
//! The client answers every response with a request naming that nonce: an
//! ACK (no error) or a NACK (`error_detail`, and the version it still
//! holds). A NACK is logged and not answered: the same endpoints would be
//! refused again, so the next response waits for the next change. A
//! request naming an older nonce crossed a newer response and is ignored.
//! A change of the subscribed names, and a change of the endpoints, are
//! answered with the current endpoints of the names subscribed.

use envoy_types::pb::envoy::service::discovery::v3::{DiscoveryRequest, DiscoveryResponse};

use super::assignment::{CLUSTERS, Endpoints, type_url};

/// Why a request was refused; the stream ends with it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("this service serves ClusterLoadAssignment (EDS) only, not `{0}`")]
    WrongType(String),
}

/// The state of one stream.
#[derive(Debug, Default)]
pub struct Subscription {
    /// The cluster names subscribed; `None` before the first request.
    names: Option<Vec<String>>,
    /// A response is owed whatever the version: the stream's first, or new
    /// names.
    owed: bool,
    /// The number of the last response sent (its nonce).
    nonce: u64,
    /// The version of the last response sent.
    sent_version: Option<String>,
}

impl Subscription {
    /// Takes in a request from the client.
    pub fn on_request(&mut self, req: &DiscoveryRequest) -> Result<(), StreamError> {
        if !req.type_url.is_empty() && req.type_url != type_url() {
            return Err(StreamError::WrongType(req.type_url.clone()));
        }
        let answers_latest = req.response_nonce == self.nonce.to_string();
        if !req.response_nonce.is_empty() && !answers_latest {
            tracing::debug!(nonce = %req.response_nonce, latest = self.nonce, "EDS request with a stale nonce ignored");
            return Ok(());
        }
        if let Some(error) = &req.error_detail {
            tracing::warn!(
                version = %self.sent_version.as_deref().unwrap_or(""),
                kept = %req.version_info,
                code = error.code,
                message = %error.message,
                "Envoy refused the endpoints it was sent (NACK); the next change is sent when \
                 membership changes"
            );
        }
        // No names: every cluster this service knows (a wildcard
        // subscription); Envoy names its clusters.
        let mut names = if req.resource_names.is_empty() {
            CLUSTERS.iter().map(|c| c.to_string()).collect()
        } else {
            req.resource_names.clone()
        };
        names.sort();
        names.dedup();
        if self.names.as_ref() != Some(&names) {
            for unknown in names.iter().filter(|n| !CLUSTERS.contains(&n.as_str())) {
                tracing::warn!(cluster = %unknown, "Envoy asks for endpoints of a cluster this service does not know");
            }
            self.names = Some(names);
            self.owed = true;
        }
        Ok(())
    }

    /// The response owed now that the endpoints are `current`, if any: the
    /// first one, one for new names, or one for new endpoints.
    pub fn response(&mut self, current: &Endpoints) -> Option<DiscoveryResponse> {
        let names = self.names.as_ref()?;
        let changed = self.sent_version.as_deref() != Some(current.version.as_str());
        if !self.owed && !changed {
            return None;
        }
        self.owed = false;
        self.nonce += 1;
        self.sent_version = Some(current.version.clone());
        Some(DiscoveryResponse {
            version_info: current.version.clone(),
            resources: current.resources(names),
            type_url: type_url(),
            nonce: self.nonce.to_string(),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
    use envoy_types::pb::google::rpc::Status;
    use prost::Message;

    use super::super::assignment::Member;
    use super::*;

    fn endpoints(ids: &[u64]) -> Endpoints {
        let members = ids
            .iter()
            .map(|&id| Member {
                id,
                address: format!("127.0.0.1:{}", 7000 + id).parse().unwrap(),
                hostname: None,
            })
            .collect();
        Endpoints::new(members, None)
    }

    fn request(names: &[&str], version: &str, nonce: &str) -> DiscoveryRequest {
        DiscoveryRequest {
            version_info: version.into(),
            resource_names: names.iter().map(|n| n.to_string()).collect(),
            type_url: type_url(),
            response_nonce: nonce.into(),
            ..Default::default()
        }
    }

    fn nack(names: &[&str], version: &str, nonce: &str) -> DiscoveryRequest {
        DiscoveryRequest {
            error_detail: Some(Status {
                code: 3,
                message: "malformed".into(),
                ..Default::default()
            }),
            ..request(names, version, nonce)
        }
    }

    fn clusters(resp: &DiscoveryResponse) -> Vec<String> {
        resp.resources
            .iter()
            .map(|r| {
                ClusterLoadAssignment::decode(r.value.as_slice())
                    .unwrap()
                    .cluster_name
            })
            .collect()
    }

    #[test]
    fn first_request_is_answered_acks_are_not_and_a_change_is_pushed_once() {
        // Proves the exchange Envoy has with a node: the subscription is
        // answered with the clusters asked for, each response with a new
        // nonce; an ACK owes nothing; a membership change owes one response
        // with the new version, and its ACK nothing more.
        let mut sub = Subscription::default();
        let three = endpoints(&[1, 2, 3]);
        assert!(sub.response(&three).is_none(), "nothing before a request");
        sub.on_request(&request(&["nodes_leader"], "", "")).unwrap();
        let first = sub.response(&three).unwrap();
        assert_eq!(first.version_info, three.version);
        assert_eq!(first.nonce, "1");
        assert_eq!(first.type_url, type_url());
        assert_eq!(clusters(&first), ["nodes_leader"]);
        assert!(sub.response(&three).is_none());

        sub.on_request(&request(&["nodes_leader"], &three.version, "1"))
            .unwrap();
        assert!(sub.response(&three).is_none(), "an ACK owes nothing");

        let four = endpoints(&[1, 2, 3, 4]);
        let pushed = sub.response(&four).unwrap();
        assert_eq!(pushed.version_info, four.version);
        assert_eq!(pushed.nonce, "2");
        sub.on_request(&request(&["nodes_leader"], &four.version, "2"))
            .unwrap();
        assert!(sub.response(&four).is_none());
    }

    #[test]
    fn new_names_are_answered_at_once_and_no_names_mean_both_clusters() {
        let mut sub = Subscription::default();
        let e = endpoints(&[1, 2]);
        sub.on_request(&request(&[], "", "")).unwrap();
        let all = sub.response(&e).unwrap();
        assert_eq!(clusters(&all), ["nodes_any", "nodes_leader"]);
        sub.on_request(&request(&["nodes_any"], &e.version, "1"))
            .unwrap();
        let narrowed = sub.response(&e).unwrap();
        assert_eq!(clusters(&narrowed), ["nodes_any"]);
        assert_eq!(narrowed.version_info, e.version);
        assert_eq!(narrowed.nonce, "2");
        // The same names in another order are no change.
        sub.on_request(&request(&["nodes_any", "nodes_any"], &e.version, "2"))
            .unwrap();
        assert!(sub.response(&e).is_none());
    }

    #[test]
    fn a_nack_is_not_answered_with_the_same_endpoints_again() {
        // Proves: a NACK is logged, not retried: nothing is sent until the
        // endpoints change, and then only once.
        let mut sub = Subscription::default();
        let three = endpoints(&[1, 2, 3]);
        sub.on_request(&request(&["nodes_any"], "", "")).unwrap();
        sub.response(&three).unwrap();
        sub.on_request(&nack(&["nodes_any"], "", "1")).unwrap();
        assert!(sub.response(&three).is_none());
        assert!(sub.response(&three).is_none());
        let two = endpoints(&[2, 3]);
        assert_eq!(sub.response(&two).unwrap().nonce, "2");
        assert!(sub.response(&two).is_none());
    }

    #[test]
    fn a_request_with_a_stale_nonce_is_ignored() {
        // Proves: a request answering an older response (it crossed a newer
        // one) changes nothing, not even the names it carries.
        let mut sub = Subscription::default();
        let three = endpoints(&[1, 2, 3]);
        let four = endpoints(&[1, 2, 3, 4]);
        sub.on_request(&request(&["nodes_any"], "", "")).unwrap();
        sub.response(&three).unwrap();
        sub.response(&four).unwrap();
        sub.on_request(&request(&["nodes_leader"], &three.version, "1"))
            .unwrap();
        assert!(sub.response(&four).is_none());
        sub.on_request(&request(&["nodes_leader"], &four.version, "2"))
            .unwrap();
        assert_eq!(clusters(&sub.response(&four).unwrap()), ["nodes_leader"]);
    }

    #[test]
    fn another_resource_type_is_refused() {
        let mut sub = Subscription::default();
        let mut req = request(&["nodes_any"], "", "");
        req.type_url = "type.googleapis.com/envoy.config.cluster.v3.Cluster".into();
        assert_eq!(
            sub.on_request(&req),
            Err(StreamError::WrongType(req.type_url.clone()))
        );
    }
}
