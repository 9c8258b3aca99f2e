//! What the node tells Envoy: the members as endpoints (`Endpoints`), and
//! the `ClusterLoadAssignment` of each of the gateway's member clusters
//! built from them. Pure: no I/O, so it is tested as it is.

use std::net::SocketAddr;

use envoy_types::pb::envoy::config::core::v3::socket_address::PortSpecifier;
use envoy_types::pb::envoy::config::core::v3::{Address, SocketAddress, address};
use envoy_types::pb::envoy::config::endpoint::v3::cluster_load_assignment::Policy;
use envoy_types::pb::envoy::config::endpoint::v3::lb_endpoint::HostIdentifier;
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, Endpoint, LbEndpoint, LocalityLbEndpoints,
};
use envoy_types::pb::google::protobuf::{Any, UInt32Value};
use prost::{Message, Name};

/// The gateway's cluster of every member, health-checked on
/// `/health/leader` (gateway/gen_envoy.py).
pub const NODES_LEADER: &str = "nodes_leader";
/// The same members, health-checked on `/health/live`.
pub const NODES_ANY: &str = "nodes_any";
/// The clusters this service answers for, both with every member.
pub const CLUSTERS: [&str; 2] = [NODES_LEADER, NODES_ANY];

/// One member as Envoy reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: u64,
    /// The member's API address as an IP address (Envoy connects to
    /// addresses, it does not resolve an endpoint's name).
    pub address: SocketAddr,
    /// The host name the member's address was given with, when it was a
    /// name (a compose service): Envoy shows it beside the address.
    pub hostname: Option<String>,
}

/// What the node serves: the members of its applied configuration, or why
/// it does not serve them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// Every member, voters and learners, in id order.
    pub members: Vec<Member>,
    /// Names the member list: the same members give the same version on
    /// every node, so an Envoy that moves to another node is sent the
    /// version it already has.
    pub version: String,
    /// Why this node cannot vouch for the members it knows (it is not in
    /// its own configuration, or has known no leader for a while): Envoy
    /// is then sent to another node rather than given a stale list.
    pub refusal: Option<String>,
}

impl Endpoints {
    /// `members` (in any order) as served, or refused for `refusal`.
    pub fn new(mut members: Vec<Member>, refusal: Option<String>) -> Endpoints {
        members.sort_by_key(|m| m.id);
        let version = version_of(&members);
        Endpoints {
            members,
            version,
            refusal,
        }
    }

    /// The load assignment of `cluster`, if it is one this service knows.
    pub fn assignment(&self, cluster: &str) -> Option<ClusterLoadAssignment> {
        if !CLUSTERS.contains(&cluster) {
            return None;
        }
        Some(ClusterLoadAssignment {
            cluster_name: cluster.to_string(),
            endpoints: vec![LocalityLbEndpoints {
                lb_endpoints: self.members.iter().map(lb_endpoint).collect(),
                ..Default::default()
            }],
            policy: Some(Policy {
                overprovisioning_factor: Some(UInt32Value {
                    value: overprovisioning_factor(self.members.len()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// The assignments of the known ones among `clusters`, packed as an
    /// xDS response carries them.
    pub fn resources(&self, clusters: &[String]) -> Vec<Any> {
        clusters
            .iter()
            .filter_map(|c| self.assignment(c))
            .map(|a| Any {
                type_url: type_url(),
                value: a.encode_to_vec(),
            })
            .collect()
    }
}

/// The type URL of a `ClusterLoadAssignment`, as EDS requests name it.
pub fn type_url() -> String {
    ClusterLoadAssignment::type_url()
}

/// One healthy host makes its priority 100 % healthy: the factor is 100
/// per member, and at least Envoy's default of 140. The gateway's leader
/// routing depends on it (gateway/gen_envoy.py's docstring).
pub fn overprovisioning_factor(members: usize) -> u32 {
    u32::try_from(members)
        .unwrap_or(u32::MAX / 100)
        .saturating_mul(100)
        .max(140)
}

/// A short name of the member list, from its content only.
fn version_of(members: &[Member]) -> String {
    let mut text = String::new();
    for m in members {
        text.push_str(&format!(
            "{}={}/{}\n",
            m.id,
            m.address,
            m.hostname.as_deref().unwrap_or("")
        ));
    }
    format!("{}-{:08x}", members.len(), crc32fast::hash(text.as_bytes()))
}

fn lb_endpoint(m: &Member) -> LbEndpoint {
    let address = Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            address: m.address.ip().to_string(),
            port_specifier: Some(PortSpecifier::PortValue(u32::from(m.address.port()))),
            ..Default::default()
        })),
    };
    LbEndpoint {
        host_identifier: Some(HostIdentifier::Endpoint(Endpoint {
            address: Some(address),
            hostname: m.hostname.clone().unwrap_or_default(),
            ..Default::default()
        })),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, address: &str) -> Member {
        Member {
            id,
            address: address.parse().unwrap(),
            hostname: None,
        }
    }

    fn addresses(a: &ClusterLoadAssignment) -> Vec<String> {
        a.endpoints[0]
            .lb_endpoints
            .iter()
            .map(|e| match &e.host_identifier {
                Some(HostIdentifier::Endpoint(Endpoint {
                    address:
                        Some(Address {
                            address: Some(address::Address::SocketAddress(s)),
                        }),
                    ..
                })) => match s.port_specifier {
                    Some(PortSpecifier::PortValue(p)) => format!("{}:{p}", s.address),
                    _ => panic!("no port"),
                },
                other => panic!("not an address: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn both_clusters_list_every_member_with_a_factor_of_100_per_member() {
        // Proves: each member cluster's assignment names every member by
        // its address, in id order whatever order they came in, with the
        // overprovisioning factor the leader routing needs; an unknown
        // cluster gets none.
        let e = Endpoints::new(
            vec![
                member(4, "127.0.0.1:7004"),
                member(1, "127.0.0.1:7001"),
                member(2, "10.0.0.2:7001"),
            ],
            None,
        );
        for cluster in CLUSTERS {
            let a = e.assignment(cluster).unwrap();
            assert_eq!(a.cluster_name, cluster);
            assert_eq!(
                addresses(&a),
                ["127.0.0.1:7001", "10.0.0.2:7001", "127.0.0.1:7004"]
            );
            let factor = a.policy.unwrap().overprovisioning_factor.unwrap().value;
            assert_eq!(factor, 300);
        }
        assert!(e.assignment("nodes").is_none());
        assert!(e.assignment("xds").is_none());
        let packed = e.resources(&["nodes_any".into(), "unknown".into()]);
        assert_eq!(packed.len(), 1);
        assert_eq!(
            packed[0].type_url,
            "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
        );
        let back = ClusterLoadAssignment::decode(packed[0].value.as_slice()).unwrap();
        assert_eq!(back, e.assignment("nodes_any").unwrap());
    }

    #[test]
    fn the_factor_is_at_least_envoys_default() {
        assert_eq!(overprovisioning_factor(0), 140);
        assert_eq!(overprovisioning_factor(1), 140);
        assert_eq!(overprovisioning_factor(2), 200);
        assert_eq!(overprovisioning_factor(5), 500);
    }

    #[test]
    fn the_version_follows_the_members_and_nothing_else() {
        // Proves: the same members give the same version (on any node, in
        // any order), and adding, removing or moving a member, or naming
        // it differently, gives another.
        let three = || {
            vec![
                member(1, "127.0.0.1:7001"),
                member(2, "127.0.0.1:7002"),
                member(3, "127.0.0.1:7003"),
            ]
        };
        let a = Endpoints::new(three(), None);
        let mut reversed = three();
        reversed.reverse();
        assert_eq!(Endpoints::new(reversed, None).version, a.version);
        assert_eq!(
            Endpoints::new(three(), Some("refused".into())).version,
            a.version,
            "a refusal is not a change of members"
        );

        let mut four = three();
        four.push(member(4, "127.0.0.1:7004"));
        let mut two = three();
        two.remove(0);
        let mut moved = three();
        moved[1].address = "127.0.0.1:7102".parse().unwrap();
        let mut named = three();
        named[2].hostname = Some("node3".into());
        let versions: Vec<String> = [four, two, moved, named]
            .into_iter()
            .map(|m| Endpoints::new(m, None).version)
            .collect();
        for v in &versions {
            assert_ne!(*v, a.version);
        }
        assert!(versions[0].starts_with("4-") && a.version.starts_with("3-"));
    }

    #[test]
    fn a_named_member_keeps_its_name_beside_its_address() {
        let mut m = member(1, "172.18.0.5:7001");
        m.hostname = Some("node1".into());
        let a = Endpoints::new(vec![m], None).assignment(NODES_ANY).unwrap();
        assert_eq!(addresses(&a), ["172.18.0.5:7001"]);
        match &a.endpoints[0].lb_endpoints[0].host_identifier {
            Some(HostIdentifier::Endpoint(e)) => assert_eq!(e.hostname, "node1"),
            other => panic!("{other:?}"),
        }
    }
}
