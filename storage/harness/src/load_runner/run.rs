//! One k6 run at a time: starting it with the plan's environment and k6's
//! REST API on the address the gateway proxies under `/k6/`, stopping it,
//! and what the caller sees of it (state, plan, times, exit code, the last
//! lines k6 printed), read once or followed as it changes ([`Runner::changes`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rustix::process::Signal;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio::sync::watch;

use super::scenario::RunPlan;

/// Lines of k6's output kept for the caller (why a run failed, its summary).
const OUTPUT_LINES: usize = 40;

/// How long an ended run's output may take to be read to its end.
const OUTPUT_DRAIN: Duration = Duration::from_secs(5);

/// Where the runner finds k6 and the scripts, and whom it loads.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub k6: PathBuf,
    /// The `loadtest` directory.
    pub scripts: PathBuf,
    /// The cluster's gateway (`http://host:port`): every run's target.
    pub target: String,
    /// Where k6 serves its REST API (`k6 run --address`).
    pub k6_address: String,
    /// Where k6 serves its web dashboard (`K6_WEB_DASHBOARD_HOST`/`_PORT`),
    /// whose event stream carries one aggregate a second, percentiles
    /// included; the page itself is not routed.
    pub k6_dashboard_address: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Nothing ran since the runner started.
    Idle,
    Running,
    /// Asked to stop; k6 is ending its iterations.
    Stopping,
    /// Ended by itself with exit code 0.
    Finished,
    /// Ended by a stop request.
    Stopped,
    /// Ended by itself with another exit code (99: a threshold was crossed),
    /// or could not start: see `output`.
    Failed,
}

/// What `GET /load/run` answers: the current or latest run.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub state: RunState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<RunPlan>,
    /// Unix milliseconds; 0 before the first run.
    pub started_at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub output: Vec<String>,
}

/// Why a start or a stop was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunConflict {
    #[error("a run of `{0}` is in progress; stop it or wait for it to end")]
    AlreadyRunning(String),
    #[error("no run is in progress")]
    NotRunning,
    #[error("k6 could not be started ({program}): {error}; `./dev setup-k6` installs it")]
    Spawn { program: String, error: String },
}

struct Current {
    view: RunView,
    pid: Option<u32>,
    stop_requested: bool,
    output: VecDeque<String>,
}

/// The environment that makes k6 serve its web dashboard on `address`
/// (`host:port`), aggregating every second; its `/events` stream is what the
/// console reads, through the gateway's `/k6/events`.
fn dashboard_env(address: &str) -> [(&'static str, String); 4] {
    let (host, port) = address.rsplit_once(':').unwrap_or((address, ""));
    [
        ("K6_WEB_DASHBOARD", "true".into()),
        ("K6_WEB_DASHBOARD_HOST", host.into()),
        ("K6_WEB_DASHBOARD_PORT", port.into()),
        ("K6_WEB_DASHBOARD_PERIOD", "1s".into()),
    ]
}

/// Starts and stops k6; cheap to clone.
#[derive(Clone)]
pub struct Runner {
    config: Arc<RunnerConfig>,
    current: Arc<Mutex<Current>>,
    /// Counts the changes of what [`Runner::view`] answers: a start, a stop,
    /// the end of a run, a line of k6's output.
    changed: Arc<watch::Sender<u64>>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Runner {
    pub fn new(config: RunnerConfig) -> Runner {
        Runner {
            config: Arc::new(config),
            current: Arc::new(Mutex::new(Current {
                view: RunView {
                    state: RunState::Idle,
                    plan: None,
                    started_at_ms: 0,
                    ended_at_ms: None,
                    exit_code: None,
                    output: Vec::new(),
                },
                pid: None,
                stop_requested: false,
                output: VecDeque::new(),
            })),
            changed: Arc::new(watch::channel(0).0),
        }
    }

    /// Wakes whoever follows the run: its view changed.
    fn touch(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Follows the run's changes: the receiver's `changed()` returns after
    /// each (several quick ones may wake it once); read [`Runner::view`]
    /// then. What `GET /load/run/events` pushes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn target(&self) -> &str {
        &self.config.target
    }

    pub fn view(&self) -> RunView {
        let current = self.current.lock();
        let mut view = current.view.clone();
        view.output = current.output.iter().cloned().collect();
        view
    }

    /// Starts `plan` unless a run is in progress; k6 sends `token` (the
    /// starter's) with its requests.
    pub fn start(&self, plan: RunPlan, token: Option<String>) -> Result<RunView, RunConflict> {
        let mut current = self.current.lock();
        if matches!(current.view.state, RunState::Running | RunState::Stopping) {
            let name = current.view.plan.as_ref().map(|p| p.scenario.name());
            return Err(RunConflict::AlreadyRunning(name.unwrap_or_default()));
        }
        let script = self.config.scripts.join(plan.scenario.script());
        let mut command = Command::new(&self.config.k6);
        command
            .args([
                "run",
                "--no-color",
                "--quiet",
                "--address",
                &self.config.k6_address,
            ])
            .arg(&script)
            .envs(plan.scenario.env(&plan))
            .envs(dashboard_env(&self.config.k6_dashboard_address))
            .envs(token.map(|t| ("STRATA_TOKEN", t)))
            .current_dir(&self.config.scripts)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| RunConflict::Spawn {
            program: self.config.k6.display().to_string(),
            error: e.to_string(),
        })?;
        current.view = RunView {
            state: RunState::Running,
            plan: Some(plan),
            started_at_ms: now_ms(),
            ended_at_ms: None,
            exit_code: None,
            output: Vec::new(),
        };
        current.pid = child.id();
        current.stop_requested = false;
        current.output.clear();
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(self.clone().keep_lines(out)));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(self.clone().keep_lines(err)));
        }
        let this = self.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            // The run ends with the last of its output: k6's final lines (its
            // summary, why it failed) may still be in the pipes when it exits.
            // Bounded, should something else hold a pipe open.
            for reader in readers {
                let _ = tokio::time::timeout(OUTPUT_DRAIN, reader).await;
            }
            let mut current = this.current.lock();
            current.pid = None;
            current.view.ended_at_ms = Some(now_ms());
            let code = status.as_ref().ok().and_then(|s| s.code());
            current.view.exit_code = code;
            current.view.state = if current.stop_requested {
                RunState::Stopped
            } else if code == Some(0) {
                RunState::Finished
            } else {
                RunState::Failed
            };
            if let Err(e) = status {
                current.output.push_back(format!("waiting for k6: {e}"));
            }
            drop(current);
            this.touch();
        });
        drop(current);
        self.touch();
        Ok(self.view())
    }

    /// Asks the run in progress to stop (SIGINT: k6 ends its iterations and
    /// prints its summary).
    pub fn stop(&self) -> Result<RunView, RunConflict> {
        let mut current = self.current.lock();
        let Some(pid) = current
            .pid
            .filter(|_| current.view.state == RunState::Running)
        else {
            return Err(RunConflict::NotRunning);
        };
        current.stop_requested = true;
        current.view.state = RunState::Stopping;
        drop(current);
        if let Err(e) = crate::run_dir::send(pid, Signal::INT) {
            self.current
                .lock()
                .output
                .push_back(format!("stopping k6 (pid {pid}): {e}"));
        }
        self.touch();
        Ok(self.view())
    }

    async fn keep_lines(self, stream: impl AsyncRead + Unpin) {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            {
                let mut current = self.current.lock();
                if current.output.len() == OUTPUT_LINES {
                    current.output.pop_front();
                }
                current.output.push_back(line);
            }
            self.touch();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::load_runner::scenario::RunRequest;

    /// Runs of the program below, one after the other.
    const RUNS: usize = 50;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_is_shown_ended_only_with_all_of_its_output() {
        // Proves: the first view of an ended run already holds the last
        // lines its program printed on both of its pipes just before it
        // exited (k6's summary and its reason for failing come last).
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("k6");
        std::fs::write(
            &fake,
            "#!/bin/sh\ni=0\nwhile [ $i -lt 20 ]; do echo \"line $i\"; i=$((i+1)); done\n\
             echo 'the last line' >&2\nexit 3\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let runner = Runner::new(RunnerConfig {
            k6: fake,
            scripts: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../loadtest"),
            target: "http://127.0.0.1:9".into(),
            k6_address: "127.0.0.1:0".into(),
            k6_dashboard_address: "127.0.0.1:0".into(),
        });
        // The race is between the program's exit and the last read of its
        // pipes: tried many times over.
        for _ in 0..RUNS {
            let mut changes = runner.changes();
            let plan = RunRequest {
                scenario: "smoke".into(),
                rate_per_s: 5,
                duration_s: 1,
            }
            .validate(runner.target())
            .unwrap();
            runner.start(plan, None).unwrap();
            let ended = tokio::time::timeout(Duration::from_secs(30), async {
                loop {
                    changes.changed().await.unwrap();
                    let view = runner.view();
                    if !matches!(view.state, RunState::Running | RunState::Stopping) {
                        return view;
                    }
                }
            })
            .await
            .expect("the run ends");
            assert_eq!(ended.state, RunState::Failed);
            assert_eq!(ended.exit_code, Some(3));
            // Each pipe's last line; the two pipes' lines may interleave.
            for last in ["line 19", "the last line"] {
                assert!(
                    ended.output.iter().any(|l| l == last),
                    "{last:?} is missing from {:?}",
                    ended.output
                );
            }
        }
    }
}
