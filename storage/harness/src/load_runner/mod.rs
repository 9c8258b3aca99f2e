//! The load runner: a small HTTP service beside a local cluster that starts
//! the bundled k6 scenarios (`loadtest/`) against that cluster's gateway,
//! one at a time, with a bounded rate and duration, and stops them. It runs
//! nothing else: the scenario is a name from a fixed list, the target is
//! the cluster it was started for, and every number is checked before k6
//! starts ([`scenario`]). Each run has k6 serve its web dashboard, whose
//! event stream (one aggregate a second, percentiles included) the gateway
//! proxies as `/k6/events`: the console reads k6's own figures there. k6's
//! REST API is served too and proxied read-only under `/k6/`; the console
//! does not use it. The runner ([`run`]) keeps the run's state and output;
//! [`http`] is its API, which the gateway routes under `/load/`.
//!
//! `strata-cluster up` starts it (`strata-cluster load-runner`), and `down`
//! stops it with the rest.

pub mod http;
pub mod run;
pub mod scenario;

pub use run::{RunState, RunView, Runner, RunnerConfig};
