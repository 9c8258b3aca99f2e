//! The bundled k6 scenarios a run may name, and the checks every run
//! request passes before anything starts. The runner takes nothing else
//! from its caller: not a script, not a target, not a k6 flag.

use serde::{Deserialize, Serialize};

/// Requests per second a run may ask for, at most. The local cluster
/// shares its host with the load generator; beyond this k6 measures its
/// own queueing, not the cluster.
pub const MAX_RATE_PER_S: u32 = 1000;
/// How long a run may last, at most, in seconds.
pub const MAX_DURATION_S: u32 = 600;

/// A bundled scenario, by the name the API takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `loadtest/smoke.js`: write, read back and check unique keys.
    Smoke,
    /// `loadtest/ycsb-rest.js` with `WORKLOAD=a`…`f`.
    Ycsb(char),
    /// `loadtest/failover.js`: the steady stream of writes the failover
    /// test runs (kill or move the leader meanwhile to see a failover).
    Failover,
}

impl Scenario {
    pub const ALL: [Scenario; 8] = [
        Scenario::Smoke,
        Scenario::Ycsb('a'),
        Scenario::Ycsb('b'),
        Scenario::Ycsb('c'),
        Scenario::Ycsb('d'),
        Scenario::Ycsb('e'),
        Scenario::Ycsb('f'),
        Scenario::Failover,
    ];

    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn name(self) -> String {
        match self {
            Scenario::Smoke => "smoke".into(),
            Scenario::Ycsb(w) => format!("ycsb-{w}"),
            Scenario::Failover => "failover".into(),
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Scenario::Smoke => "unique keys written, read back and checked",
            Scenario::Ycsb('a') => "YCSB A: 50% reads, 50% updates",
            Scenario::Ycsb('b') => "YCSB B: 95% reads, 5% updates",
            Scenario::Ycsb('c') => "YCSB C: reads only",
            Scenario::Ycsb('d') => "YCSB D: 95% reads of the latest, 5% inserts",
            Scenario::Ycsb('e') => "YCSB E: 95% short scans, 5% inserts",
            Scenario::Ycsb(_) => "YCSB F: 50% reads, 50% read-modify-writes",
            Scenario::Failover => "a steady stream of writes (move or kill the leader meanwhile)",
        }
    }

    /// The script, relative to the `loadtest` directory.
    pub fn script(self) -> &'static str {
        match self {
            Scenario::Smoke => "smoke.js",
            Scenario::Ycsb(_) => "ycsb-rest.js",
            Scenario::Failover => "failover.js",
        }
    }

    /// The environment the script reads its rate and duration from.
    pub fn env(self, plan: &RunPlan) -> Vec<(String, String)> {
        let duration = format!("{}s", plan.duration_s);
        let rate = plan.rate_per_s.to_string();
        let mut env = match self {
            Scenario::Smoke => vec![
                ("SMOKE_RATE".into(), rate),
                ("SMOKE_DURATION".into(), duration),
            ],
            Scenario::Ycsb(w) => vec![
                ("WORKLOAD".into(), w.to_string()),
                ("RATE".into(), rate),
                ("DURATION".into(), duration),
            ],
            Scenario::Failover => vec![("RATE".into(), rate), ("DURATION".into(), duration)],
        };
        env.push(("STRATA_URL".into(), plan.target.clone()));
        env
    }
}

/// What a caller asks for (`POST /load/run`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    pub scenario: String,
    pub rate_per_s: u32,
    pub duration_s: u32,
}

/// A request that passed every check, against the runner's own cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPlan {
    #[serde(serialize_with = "scenario_name")]
    pub scenario: Scenario,
    pub rate_per_s: u32,
    pub duration_s: u32,
    /// The gateway of the cluster the runner belongs to; never the caller's.
    #[serde(skip)]
    pub target: String,
}

fn scenario_name<S: serde::Serializer>(s: &Scenario, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(&s.name())
}

/// Why a run request was refused before anything started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRun {
    #[error("unknown scenario `{0}`: the runner runs only the bundled ones ({names})", names = names())]
    UnknownScenario(String),
    #[error("rate_per_s must be between 1 and {MAX_RATE_PER_S}, not {0}")]
    Rate(u32),
    #[error("duration_s must be between 1 and {MAX_DURATION_S}, not {0}")]
    Duration(u32),
}

fn names() -> String {
    Scenario::ALL
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl RunRequest {
    /// Checks every field; `target` is the runner's own cluster.
    pub fn validate(&self, target: &str) -> Result<RunPlan, InvalidRun> {
        let scenario = Scenario::parse(&self.scenario)
            .ok_or_else(|| InvalidRun::UnknownScenario(self.scenario.clone()))?;
        if !(1..=MAX_RATE_PER_S).contains(&self.rate_per_s) {
            return Err(InvalidRun::Rate(self.rate_per_s));
        }
        if !(1..=MAX_DURATION_S).contains(&self.duration_s) {
            return Err(InvalidRun::Duration(self.duration_s));
        }
        Ok(RunPlan {
            scenario,
            rate_per_s: self.rate_per_s,
            duration_s: self.duration_s,
            target: target.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(scenario: &str, rate_per_s: u32, duration_s: u32) -> RunRequest {
        RunRequest {
            scenario: scenario.into(),
            rate_per_s,
            duration_s,
        }
    }

    #[test]
    fn every_bundled_scenario_is_accepted_within_bounds() {
        // Proves the names round-trip and each maps to a script that exists.
        let loadtest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../loadtest");
        for s in Scenario::ALL {
            let plan = request(&s.name(), 10, 5).validate("http://gw").unwrap();
            assert_eq!(plan.scenario, s);
            assert!(loadtest.join(s.script()).is_file(), "{}", s.script());
        }
    }

    #[test]
    fn unknown_scenarios_and_out_of_bound_numbers_are_refused() {
        // Proves the runner's limits: nothing outside the bundle, the rate
        // and the duration both bounded on each side.
        assert!(matches!(
            request("../../etc/passwd", 10, 5).validate("t"),
            Err(InvalidRun::UnknownScenario(_))
        ));
        assert!(matches!(
            request("ycsb-g", 10, 5).validate("t"),
            Err(InvalidRun::UnknownScenario(_))
        ));
        assert_eq!(
            request("smoke", 0, 5).validate("t"),
            Err(InvalidRun::Rate(0))
        );
        assert_eq!(
            request("smoke", MAX_RATE_PER_S + 1, 5).validate("t"),
            Err(InvalidRun::Rate(MAX_RATE_PER_S + 1))
        );
        assert_eq!(
            request("smoke", 1, 0).validate("t"),
            Err(InvalidRun::Duration(0))
        );
        assert_eq!(
            request("smoke", 1, MAX_DURATION_S + 1).validate("t"),
            Err(InvalidRun::Duration(MAX_DURATION_S + 1))
        );
        let message = request("x", 1, 1).validate("t").unwrap_err().to_string();
        assert!(message.contains("smoke, ycsb-a"), "{message}");
    }

    #[test]
    fn the_environment_carries_the_rate_duration_and_the_runners_own_target() {
        let plan = request("ycsb-e", 40, 30)
            .validate("http://127.0.0.1:8080")
            .unwrap();
        let env = plan.scenario.env(&plan);
        for pair in [
            ("WORKLOAD", "e"),
            ("RATE", "40"),
            ("DURATION", "30s"),
            ("STRATA_URL", "http://127.0.0.1:8080"),
        ] {
            assert!(
                env.contains(&(pair.0.to_string(), pair.1.to_string())),
                "{env:?}"
            );
        }
        let smoke = request("smoke", 5, 3).validate("http://gw").unwrap();
        assert!(
            smoke
                .scenario
                .env(&smoke)
                .contains(&("SMOKE_RATE".into(), "5".into()))
        );
    }
}
