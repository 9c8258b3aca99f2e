//! A node's scrape read into [`NodeStats`]: the JSON view of the same
//! numbers `/metrics` shows.
//!
//! Every family of the scrape must land somewhere in the JSON: [`read`]
//! reports the families it did not take, and a test over a real node's
//! scrape fails when there are any, so a metric added to the registry
//! without a place in the stats cannot go unnoticed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::metrics::scrape::{Family, Sample, Scrape};
use crate::rest::model::cluster::{RaftEvent, Role};
use crate::rest::model::stats::{
    ApiStats, Bucket, CanaryOps, CanaryStats, ElectionCount, EngineActivity, EngineStats,
    EventCount, Histogram, InFlight, LevelShape, MemberProgress, NodeStats, ProcessStats,
    RaftStats, RequestCount, RouteLatency, SlowRequest,
};

/// The families of a scrape, remembering which were read.
struct Families<'a> {
    by_name: HashMap<&'a str, &'a Family>,
    read: RefCell<BTreeSet<&'a str>>,
}

impl<'a> Families<'a> {
    fn new(scrape: &'a Scrape) -> Self {
        Families {
            by_name: scrape
                .families
                .iter()
                .map(|f| (f.name.as_str(), f))
                .collect(),
            read: RefCell::default(),
        }
    }

    /// The samples of family `name` (none when the scrape lacks it).
    fn samples(&self, name: &str) -> &'a [Sample] {
        match self.by_name.get_key_value(name) {
            Some((&key, family)) => {
                self.read.borrow_mut().insert(key);
                &family.samples
            }
            None => &[],
        }
    }

    /// The value of an unlabelled gauge or counter; `None` when absent.
    fn maybe(&self, name: &str) -> Option<f64> {
        self.samples(name).first().map(|s| s.value)
    }

    fn number(&self, name: &str) -> f64 {
        self.maybe(name).unwrap_or(0.0)
    }

    fn count(&self, name: &str) -> u64 {
        whole(self.number(name))
    }

    /// An unlabelled histogram.
    fn histogram(&self, name: &str) -> Histogram {
        histogram(self.samples(name).iter())
    }

    /// Families never read, by name.
    fn unread(&self) -> Vec<String> {
        let read = self.read.borrow();
        let mut names: Vec<String> = self
            .by_name
            .keys()
            .filter(|n| !read.contains(*n))
            .map(|n| n.to_string())
            .collect();
        names.sort();
        names
    }
}

/// A count exported as a float: negative or NaN reads as 0.
fn whole(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

/// The histogram the `_sum`, `_count` and `_bucket` samples make.
fn histogram<'s>(samples: impl Iterator<Item = &'s Sample>) -> Histogram {
    let mut h = Histogram::default();
    for s in samples {
        match s.suffix.as_str() {
            "_sum" => h.sum = s.value,
            "_count" => h.count = whole(s.value),
            "_bucket" => {
                if let Ok(le) = s.label("le").parse::<f64>()
                    && le.is_finite()
                {
                    h.buckets.push(Bucket {
                        le,
                        count: whole(s.value),
                    });
                }
            }
            _ => {}
        }
    }
    h.buckets.sort_by(|a, b| a.le.total_cmp(&b.le));
    h
}

/// Reads `scrape` into stats (with `engine_activity` and `raft_activity`,
/// which the scrape does not carry), and names the families it did not read.
pub fn read(
    scrape: &Scrape,
    engine_activity: Vec<EngineActivity>,
    raft_activity: Vec<RaftEvent>,
    slow_requests: Vec<SlowRequest>,
) -> (NodeStats, Vec<String>) {
    let f = Families::new(scrape);
    let version = f
        .samples("strata_build_info")
        .first()
        .map(|s| s.label("version").to_string())
        .unwrap_or_default();
    let stats = NodeStats {
        version,
        api: api(&f),
        raft: raft(&f),
        engine: engine(&f),
        process: process(&f),
        canary: canary(&f),
        engine_activity,
        raft_activity,
        slow_requests,
    };
    (stats, f.unread())
}

fn api(f: &Families) -> ApiStats {
    let requests = f
        .samples("strata_api_requests")
        .iter()
        .map(|s| RequestCount {
            protocol: s.label("protocol").into(),
            route: s.label("route").into(),
            code: s.label("code").into(),
            count: whole(s.value),
        })
        .collect();
    let mut routes: BTreeMap<(String, String), Vec<&Sample>> = BTreeMap::new();
    for s in f.samples("strata_api_request_duration_seconds") {
        let key = (
            s.label("protocol").to_string(),
            s.label("route").to_string(),
        );
        routes.entry(key).or_default().push(s);
    }
    let latency = routes
        .into_iter()
        .map(|((protocol, route), samples)| RouteLatency {
            protocol,
            route,
            seconds: histogram(samples.into_iter()),
        })
        .collect();
    let in_flight = f
        .samples("strata_api_requests_in_flight")
        .iter()
        .map(|s| InFlight {
            protocol: s.label("protocol").into(),
            count: whole(s.value),
        })
        .collect();
    ApiStats {
        requests,
        latency,
        in_flight,
        forwarded: f.count("strata_api_forwarded"),
    }
}

fn raft(f: &Families) -> RaftStats {
    let role = f
        .samples("strata_raft_role")
        .iter()
        .find(|s| s.value == 1.0)
        .map_or(Role::unknown(), |s| Role::from_name(s.label("role")));
    let events = f
        .samples("strata_raft_events")
        .iter()
        .map(|s| EventCount {
            kind: s.label("kind").into(),
            count: whole(s.value),
        })
        .collect();
    let lag: HashMap<&str, u64> = f
        .samples("strata_raft_member_lag_entries")
        .iter()
        .map(|s| (s.label("member"), whole(s.value)))
        .collect();
    let lag_seconds: HashMap<&str, f64> = f
        .samples("strata_raft_member_lag_seconds")
        .iter()
        .map(|s| (s.label("member"), s.value))
        .collect();
    let elections = f
        .samples("strata_raft_elections")
        .iter()
        .map(|s| ElectionCount {
            reason: s.label("reason").into(),
            count: whole(s.value),
        })
        .collect();
    let mut members: Vec<MemberProgress> = f
        .samples("strata_raft_member_match_index")
        .iter()
        .filter_map(|s| {
            Some(MemberProgress {
                member: s.label("member").parse().ok()?,
                match_index: whole(s.value),
                lag_entries: lag.get(s.label("member")).copied().unwrap_or(0),
                lag_ms: lag_seconds
                    .get(s.label("member"))
                    .map_or(0.0, |secs| secs * 1000.0),
            })
        })
        .collect();
    members.sort_by_key(|m| m.member);
    RaftStats {
        term: f.count("strata_raft_term"),
        role,
        leader_id: f.count("strata_raft_leader_id"),
        commit_index: f.count("strata_raft_commit_index"),
        applied_index: f.count("strata_raft_applied_index"),
        last_index: f.count("strata_raft_last_index"),
        first_index: f.maybe("strata_raft_first_index").map(whole),
        log_entry_bytes: f.maybe("strata_raft_log_entry_bytes").map(whole),
        voters: f.count("strata_raft_voters"),
        learners: f.count("strata_raft_learners"),
        healthy: f.number("strata_raft_healthy") == 1.0,
        events,
        elections,
        proposals: f.count("strata_raft_proposals"),
        proposal_batch_size: f.histogram("strata_raft_proposal_batch_size"),
        commit_seconds: f.histogram("strata_raft_commit_seconds"),
        read_index_seconds: f.histogram("strata_raft_read_index_seconds"),
        append_seconds: f.histogram("strata_raft_append_seconds"),
        log_syncs: f.count("strata_raft_log_syncs"),
        appended_bytes: f.count("strata_raft_appended_bytes"),
        appended_entries: f.count("strata_raft_appended_entries"),
        applied_entries: f.count("strata_raft_applied_entries"),
        members,
    }
}

fn engine(f: &Families) -> EngineStats {
    let bytes: HashMap<&str, u64> = f
        .samples("strata_engine_level_bytes")
        .iter()
        .map(|s| (s.label("level"), whole(s.value)))
        .collect();
    let levels = f
        .samples("strata_engine_level_files")
        .iter()
        .filter_map(|s| {
            Some(LevelShape {
                level: s.label("level").parse().ok()?,
                files: whole(s.value),
                bytes: bytes.get(s.label("level")).copied().unwrap_or(0),
            })
        })
        .collect();
    let p = "strata_engine_";
    let count = |name: &str| f.count(&format!("{p}{name}"));
    let secs = |name: &str| f.number(&format!("{p}{name}"));
    EngineStats {
        memtable_bytes: count("memtable_bytes"),
        memtable_limit_bytes: count("memtable_limit_bytes"),
        l0_slowdown_files: count("l0_slowdown_files"),
        l0_stop_files: count("l0_stop_files"),
        immutable_memtables: count("immutable_memtables"),
        immutable_memtable_bytes: count("immutable_memtable_bytes"),
        levels,
        flushes: count("flushes"),
        flush_seconds: secs("flush_seconds"),
        flush_written_bytes: count("flush_written_bytes"),
        compactions: count("compactions"),
        compaction_seconds: secs("compaction_seconds"),
        compaction_read_bytes: count("compaction_read_bytes"),
        compaction_written_bytes: count("compaction_written_bytes"),
        user_written_bytes: count("user_written_bytes"),
        stall_seconds: secs("stall_seconds"),
        slowdown_seconds: secs("slowdown_seconds"),
        gets: count("gets"),
        table_probes: count("table_probes"),
        bloom_useful: count("bloom_useful"),
        bloom_false_positives: count("bloom_false_positives"),
        block_cache_hits: count("block_cache_hits"),
        block_cache_misses: count("block_cache_misses"),
        events_dropped: count("events_dropped"),
    }
}

fn process(f: &Families) -> ProcessStats {
    let p = "strata_process_";
    let maybe = |name: &str| f.maybe(&format!("{p}{name}"));
    let whole_maybe = |name: &str| maybe(name).map(whole);
    ProcessStats {
        cpu_seconds: maybe("cpu_seconds"),
        resident_memory_bytes: whole_maybe("resident_memory_bytes"),
        threads: whole_maybe("threads"),
        open_fds: whole_maybe("open_fds"),
        data_dir_free_bytes: whole_maybe("data_dir_free_bytes"),
        data_dir_size_bytes: whole_maybe("data_dir_size_bytes"),
        start_time_seconds: maybe("start_time_seconds"),
    }
}

fn canary(f: &Families) -> CanaryStats {
    let ops = f
        .samples("strata_canary_ops")
        .iter()
        .map(|s| CanaryOps {
            op: s.label("op").into(),
            outcome: s.label("outcome").into(),
            count: whole(s.value),
        })
        .collect();
    let windows: HashMap<&str, u64> = f
        .samples("strata_canary_windows")
        .iter()
        .map(|s| (s.label("verdict"), whole(s.value)))
        .collect();
    let window = |v: &str| windows.get(v).copied().unwrap_or(0);
    CanaryStats {
        ops,
        windows_ok: window("ok"),
        windows_violation: window("violation"),
        windows_inconclusive: window("inconclusive"),
        violations: f.count("strata_canary_violations"),
        last_check_seconds: f.number("strata_canary_last_check_timestamp_seconds"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_families_group_into_their_records() {
        // Proves the label-keyed families come out as records: a route's
        // latency buckets in order (without +Inf), each member's match and
        // lag (entries and milliseconds) joined, elections by reason,
        // each level's files and bytes joined, the role that is
        // 1, and families the reading does not know reported as unread.
        let text = r#"# TYPE strata_api_request_duration_seconds histogram
strata_api_request_duration_seconds_sum{protocol="rest",route="PUT /v1/kv/{key}"} 0.25
strata_api_request_duration_seconds_count{protocol="rest",route="PUT /v1/kv/{key}"} 4
strata_api_request_duration_seconds_bucket{le="0.0002",protocol="rest",route="PUT /v1/kv/{key}"} 3
strata_api_request_duration_seconds_bucket{le="0.0001",protocol="rest",route="PUT /v1/kv/{key}"} 1
strata_api_request_duration_seconds_bucket{le="+Inf",protocol="rest",route="PUT /v1/kv/{key}"} 4
# TYPE strata_raft_role gauge
strata_raft_role{role="leader"} 0.0
strata_raft_role{role="follower"} 1.0
# TYPE strata_raft_member_match_index gauge
strata_raft_member_match_index{member="3"} 90
strata_raft_member_match_index{member="2"} 100
# TYPE strata_raft_member_lag_entries gauge
strata_raft_member_lag_entries{member="2"} 0
strata_raft_member_lag_entries{member="3"} 10
# TYPE strata_raft_member_lag_seconds gauge
strata_raft_member_lag_seconds{member="2"} 0.0
strata_raft_member_lag_seconds{member="3"} 0.125
# TYPE strata_raft_elections counter
strata_raft_elections_total{reason="leader_lost"} 2
strata_raft_elections_total{reason="transfer"} 1
# TYPE strata_engine_level_files gauge
strata_engine_level_files{level="0"} 2.0
strata_engine_level_files{level="1"} 1.0
# TYPE strata_engine_level_bytes gauge
strata_engine_level_bytes{level="0"} 2048.0
strata_engine_level_bytes{level="1"} 4096.0
# TYPE strata_something_new gauge
strata_something_new 1
# EOF
"#;
        let (s, unread) = read(
            &Scrape::parse(text).unwrap(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        let put = &s.api.latency[0];
        assert_eq!(put.route, "PUT /v1/kv/{key}");
        assert_eq!(put.seconds.count, 4);
        let les: Vec<f64> = put.seconds.buckets.iter().map(|b| b.le).collect();
        assert_eq!(les, [0.0001, 0.0002]);
        assert_eq!(s.raft.role.as_str(), "follower");
        assert_eq!(
            s.raft.members,
            [
                MemberProgress {
                    member: 2,
                    match_index: 100,
                    lag_entries: 0,
                    lag_ms: 0.0,
                },
                MemberProgress {
                    member: 3,
                    match_index: 90,
                    lag_entries: 10,
                    lag_ms: 125.0,
                },
            ]
        );
        let elections: Vec<(&str, u64)> = s
            .raft
            .elections
            .iter()
            .map(|e| (e.reason.as_str(), e.count))
            .collect();
        assert_eq!(elections, [("leader_lost", 2), ("transfer", 1)]);
        assert_eq!(s.engine.levels[1].bytes, 4096);
        assert_eq!(s.engine.levels[0].files, 2);
        assert_eq!(unread, ["strata_something_new"]);
        assert_eq!(s.process.cpu_seconds, None, "absent stays absent");
    }
}
