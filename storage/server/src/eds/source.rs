//! The endpoints a node serves, kept current: a task that follows the raft
//! peer's events (a membership change is one) and publishes the members of
//! the configuration the node has applied on a `watch` channel, which every
//! EDS stream of the node reads.
//!
//! A follower serves its own applied configuration, which trails the
//! leader's by the time it takes to apply the change (milliseconds on a
//! healthy group). A node that is cut off from the group (partitioned, or
//! removed without having applied its removal) would serve an old list for
//! ever, so a node that is not a member of its own configuration, or has
//! known no leader for [`LEADERLESS_GRACE`], refuses instead, and Envoy
//! asks another node.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_raft::PeerStatus;
use tokio::sync::{broadcast, watch};

use super::assignment::{Endpoints, Member};
use crate::core::Core;

/// How long a node may know no leader before it stops vouching for its
/// member list: several election timeouts (100–200 ms each by default), so
/// an ordinary election does not send Envoy elsewhere, while a node cut off
/// from the group does within about a second.
pub const LEADERLESS_GRACE: Duration = Duration::from_secs(1);
/// How often a node looks again while it has a reason to (it knows no
/// leader, or members are given by name).
const RECHECK_EVERY: Duration = Duration::from_millis(250);
/// How often member names are looked up again (a compose container that
/// restarts may get another address).
const RESOLVE_EVERY: Duration = Duration::from_secs(2);
/// How long one lookup of a member's name may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(1);

/// Starts following `core`'s raft peer; the channel holds the current
/// endpoints until `stopping`.
pub async fn spawn(
    core: Arc<Core>,
    mut stopping: watch::Receiver<bool>,
) -> (watch::Receiver<Arc<Endpoints>>, tokio::task::JoinHandle<()>) {
    let mut events = core.peer().subscribe();
    let mut names = Names::default();
    let mut leaderless_since = None;
    let first = current(&core, &mut names, &mut leaderless_since).await;
    let (tx, rx) = watch::channel(Arc::new(first));
    let task = tokio::spawn(async move {
        loop {
            let recheck = names.any() || leaderless_since.is_some();
            tokio::select! {
                event = events.recv() => {
                    // A lagging receiver only missed events: the status
                    // read below is the current one either way.
                    if let Err(broadcast::error::RecvError::Closed) = event {
                        return;
                    }
                }
                _ = tokio::time::sleep(RECHECK_EVERY), if recheck => {}
                _ = stopping.changed() => return,
            }
            if *stopping.borrow() {
                return;
            }
            let next = current(&core, &mut names, &mut leaderless_since).await;
            tx.send_if_modified(|served| {
                if **served == next {
                    return false;
                }
                match (&served.refusal, &next.refusal) {
                    (None, Some(why)) => {
                        tracing::info!(reason = %why, "no longer serving the gateway its endpoints");
                    }
                    (Some(_), None) => tracing::info!("serving the gateway its endpoints again"),
                    _ => {}
                }
                if served.version != next.version {
                    tracing::info!(
                        version = %next.version,
                        members = ?next.members.iter().map(|m| m.id).collect::<Vec<_>>(),
                        "the gateway's endpoints changed"
                    );
                }
                *served = Arc::new(next);
                true
            });
        }
    });
    (rx, task)
}

/// The endpoints as of now.
async fn current(
    core: &Core,
    names: &mut Names,
    leaderless_since: &mut Option<Instant>,
) -> Endpoints {
    let st = core.peer().status();
    if st.leader_id == 0 {
        leaderless_since.get_or_insert_with(Instant::now);
    } else {
        *leaderless_since = None;
    }
    let members = names.members(core.channels().members()).await;
    Endpoints::new(members, refusal(&st, leaderless_since.map(|t| t.elapsed())))
}

/// Why a node with status `st`, leaderless for `leaderless` (if it is),
/// cannot vouch for its member list.
fn refusal(st: &PeerStatus, leaderless: Option<Duration>) -> Option<String> {
    if !st.voters.contains(&st.id) && !st.learners.contains(&st.id) {
        return Some(format!(
            "node {} is not a member of the configuration it applied; ask another node",
            st.id
        ));
    }
    match leaderless {
        Some(d) if d >= LEADERLESS_GRACE => Some(format!(
            "node {} has known no leader for {LEADERLESS_GRACE:?}: its member list may be \
             out of date; ask another node",
            st.id
        )),
        _ => None,
    }
}

/// Members' addresses as IP addresses: literal ones as they are, names
/// looked up (IPv4 first, as the gateway's DNS clusters do) and looked up
/// again every [`RESOLVE_EVERY`]. A name that does not resolve keeps its
/// last address; one that never did is left out until it does.
#[derive(Default)]
struct Names {
    resolved: HashMap<String, SocketAddr>,
    looked_up: Option<Instant>,
    failing: BTreeSet<String>,
    named: bool,
}

impl Names {
    /// Whether any member is given by name.
    fn any(&self) -> bool {
        self.named
    }

    async fn members(&mut self, directory: BTreeMap<u64, String>) -> Vec<Member> {
        let due = self.looked_up.is_none_or(|t| t.elapsed() >= RESOLVE_EVERY);
        let mut looked_up = false;
        let mut members = Vec::with_capacity(directory.len());
        self.named = false;
        for (id, text) in directory {
            if let Ok(address) = text.parse::<SocketAddr>() {
                members.push(Member {
                    id,
                    address,
                    hostname: None,
                });
                continue;
            }
            self.named = true;
            if due || !self.resolved.contains_key(&text) {
                looked_up = true;
                self.look_up(&text).await;
            }
            if let Some(&address) = self.resolved.get(&text) {
                let host = text.rsplit_once(':').map_or(text.as_str(), |(h, _)| h);
                members.push(Member {
                    id,
                    address,
                    hostname: Some(host.to_string()),
                });
            }
        }
        if looked_up {
            self.looked_up = Some(Instant::now());
        }
        members
    }

    async fn look_up(&mut self, name: &str) {
        let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host(name)).await;
        let addresses: Vec<SocketAddr> = match found {
            Ok(Ok(it)) => it.collect(),
            Ok(Err(e)) => {
                self.failed(name, &e.to_string());
                return;
            }
            Err(_) => {
                self.failed(name, "the lookup timed out");
                return;
            }
        };
        let Some(&address) = addresses.iter().find(|a| a.is_ipv4()).or(addresses.first()) else {
            self.failed(name, "no address");
            return;
        };
        if self.failing.remove(name) {
            tracing::info!(%name, %address, "a member's name resolves again");
        }
        self.resolved.insert(name.to_string(), address);
    }

    /// Logs a failed lookup once, until it succeeds again.
    fn failed(&mut self, name: &str, why: &str) {
        if self.failing.insert(name.to_string()) {
            tracing::warn!(
                %name,
                error = why,
                kept = ?self.resolved.get(name),
                "a member's name does not resolve; the gateway keeps its last address, if any"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(id: u64, voters: &[u64], learners: &[u64]) -> PeerStatus {
        PeerStatus {
            id,
            group_id: 1,
            role: strata_raft::Role::Follower,
            term: 2,
            leader_id: 1,
            commit_index: 0,
            applied_index: 0,
            last_index: 0,
            first_index: 0,
            log_bytes: 0,
            voters: voters.to_vec(),
            learners: learners.to_vec(),
            leaving: Vec::new(),
            failure: None,
            proven: true,
        }
    }

    #[test]
    fn a_member_that_knows_a_leader_serves_and_others_refuse() {
        // Proves: voters and learners serve their list, also during a short
        // election; a node outside its own configuration, or leaderless for
        // the grace period, refuses and says why.
        assert_eq!(refusal(&status(2, &[1, 2, 3], &[]), None), None);
        assert_eq!(refusal(&status(4, &[1, 2, 3], &[4]), None), None);
        assert_eq!(
            refusal(&status(2, &[1, 2, 3], &[]), Some(LEADERLESS_GRACE / 2)),
            None
        );
        let gone = refusal(&status(1, &[2, 3, 4], &[]), None).unwrap();
        assert!(gone.contains("not a member"), "{gone}");
        let cut_off = refusal(&status(1, &[1, 2, 3], &[]), Some(LEADERLESS_GRACE)).unwrap();
        assert!(cut_off.contains("no leader"), "{cut_off}");
        let joining = refusal(&status(5, &[], &[]), None).unwrap();
        assert!(joining.contains("not a member"), "{joining}");
    }

    #[tokio::test]
    async fn literal_addresses_are_used_as_they_are_and_names_are_looked_up() {
        // Proves: an IP address needs no lookup; a name is resolved (here
        // `localhost`) and keeps its name beside the address; a name that
        // never resolves is left out rather than failing the others.
        let mut names = Names::default();
        let directory: BTreeMap<u64, String> = [
            (1, "127.0.0.1:7001".to_string()),
            (2, "[::1]:7002".to_string()),
        ]
        .into();
        let members = names.members(directory).await;
        assert!(!names.any());
        assert_eq!(members.len(), 2);
        assert_eq!(members[1].address, "[::1]:7002".parse().unwrap());

        let directory: BTreeMap<u64, String> = [
            (1, "127.0.0.1:7001".to_string()),
            (3, "localhost:7003".to_string()),
            (4, "no-such-member.invalid:7004".to_string()),
        ]
        .into();
        let members = names.members(directory).await;
        assert!(names.any());
        let ids: Vec<u64> = members.iter().map(|m| m.id).collect();
        assert_eq!(ids, [1, 3]);
        assert_eq!(members[1].address.port(), 7003);
        assert!(members[1].address.ip().is_loopback());
        assert_eq!(members[1].hostname.as_deref(), Some("localhost"));
        assert!(names.failing.contains("no-such-member.invalid:7004"));
    }
}
