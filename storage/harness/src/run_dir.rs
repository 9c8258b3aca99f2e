//! A run directory: processes started detached from the caller and recorded
//! by pid, so that a later invocation (`strata-cluster down`, a recipe's
//! exit trap) stops exactly those processes and nothing else.
//!
//! Layout: `pids/<name>.pid` (the pid alone, which other tools read too),
//! `pids/<name>.start` (when that process started, in clock ticks since
//! boot, which tells it from a later process given the same pid),
//! `logs/<name>.log` (its stdout and stderr), `data/` (the nodes' data
//! directories).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::process::{Pid, Signal, kill_process};

use crate::command::CommandLine;

/// A run directory and the processes recorded in it.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    fn pids(&self) -> PathBuf {
        self.root.join("pids")
    }

    fn pid_file(&self, name: &str) -> PathBuf {
        self.pids().join(format!("{name}.pid"))
    }

    fn start_file(&self, name: &str) -> PathBuf {
        self.pids().join(format!("{name}.start"))
    }

    /// Starts `line` as process `name`: in its own process group (a Ctrl-C
    /// in the caller's terminal does not reach it, and it outlives the
    /// caller), output appended to `logs/<name>.log`, pid recorded.
    pub fn spawn(&self, name: &str, line: &CommandLine) -> Result<u32> {
        std::fs::create_dir_all(self.logs())?;
        std::fs::create_dir_all(self.pids())?;
        let log_path = self.logs().join(format!("{name}.log"));
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        writeln!(log, "=== start: {}", line.argv().join(" "))?;
        let child = line
            .command()
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {name} ({})", line.program.display()))?;
        let pid = child.id();
        let started = start_time(pid).context("the process just started has no /proc entry")?;
        std::fs::write(self.start_file(name), format!("{started}\n"))?;
        std::fs::write(self.pid_file(name), format!("{pid}\n"))?;
        Ok(pid)
    }

    /// Every recorded process: name and pid.
    pub fn recorded(&self) -> BTreeMap<String, u32> {
        let Ok(entries) = std::fs::read_dir(self.pids()) else {
            return BTreeMap::new();
        };
        entries
            .filter_map(|e| {
                let path = e.ok()?.path();
                let name = path
                    .file_name()?
                    .to_str()?
                    .strip_suffix(".pid")?
                    .to_string();
                let pid = std::fs::read_to_string(&path).ok()?.trim().parse().ok()?;
                Some((name, pid))
            })
            .collect()
    }

    /// The pid of process `name` while it runs.
    pub fn running_pid(&self, name: &str) -> Option<u32> {
        let pid = *self.recorded().get(name)?;
        self.is_ours(name, pid).then_some(pid)
    }

    /// Whether `pid` is alive and still the process recorded as `name`
    /// (pids are reused once a process has gone).
    fn is_ours(&self, name: &str, pid: u32) -> bool {
        let Some(started) = start_time(pid) else {
            return false;
        };
        match std::fs::read_to_string(self.start_file(name)) {
            Ok(recorded) => recorded.trim().parse() == Ok(started),
            // Recorded without a start time (by the launcher this one
            // replaced): trust a live pid.
            Err(_) => true,
        }
    }

    /// Sends `signal` to process `name` if it runs; with `wait`, waits up to
    /// that long for it to exit and forgets it once it has. Returns its pid
    /// when it was running.
    pub fn signal(
        &self,
        name: &str,
        signal: Signal,
        wait: Option<Duration>,
    ) -> Result<Option<u32>> {
        let Some(pid) = self.running_pid(name) else {
            self.forget(name);
            return Ok(None);
        };
        send(pid, signal)?;
        if let Some(limit) = wait {
            let deadline = Instant::now() + limit;
            while self.is_ours(name, pid) {
                if Instant::now() > deadline {
                    anyhow::bail!("{name} (pid {pid}) still runs {limit:?} after {signal:?}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            self.forget(name);
        }
        Ok(Some(pid))
    }

    /// Stops every recorded process: SIGTERM (and SIGCONT, in case it is
    /// paused), then SIGKILL for whatever still runs after `grace`. Returns
    /// the names of those that were running.
    pub fn stop_all(&self, grace: Duration) -> Result<Vec<String>> {
        let running: Vec<(String, u32)> = self
            .recorded()
            .into_iter()
            .filter(|(name, pid)| self.is_ours(name, *pid))
            .collect();
        for (_, pid) in &running {
            send(*pid, Signal::TERM)?;
            send(*pid, Signal::CONT)?;
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && running.iter().any(|(n, p)| self.is_ours(n, *p)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        for (name, pid) in &running {
            if self.is_ours(name, *pid) {
                send(*pid, Signal::KILL)?;
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && running.iter().any(|(n, p)| self.is_ours(n, *p)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some((name, pid)) = running.iter().find(|(n, p)| self.is_ours(n, *p)) {
            anyhow::bail!("{name} (pid {pid}) survived SIGKILL");
        }
        for name in self.recorded().keys() {
            self.forget(name);
        }
        Ok(running.into_iter().map(|(name, _)| name).collect())
    }

    fn forget(&self, name: &str) {
        let _ = std::fs::remove_file(self.pid_file(name));
        let _ = std::fs::remove_file(self.start_file(name));
    }

    /// The last `lines` lines of process `name`'s log.
    pub fn log_tail(&self, name: &str, lines: usize) -> String {
        let text = std::fs::read_to_string(self.logs().join(format!("{name}.log")))
            .unwrap_or_else(|_| "(no log)".into());
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// When `pid` started (clock ticks since boot), if it is alive: neither gone
/// nor a zombie waiting to be reaped.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid …": the command may contain anything, so count
    // fields after its closing parenthesis; the start time is field 22.
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Sends `signal` to `pid`; a process that is already gone is no error.
pub(crate) fn send(pid: u32, signal: Signal) -> Result<()> {
    let raw = i32::try_from(pid).context("pid out of range")?;
    let pid = Pid::from_raw(raw).context("pid 0")?;
    match kill_process(pid, signal) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(e) => Err(e).with_context(|| format!("signalling pid {raw}")),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn sleeper(secs: &str) -> CommandLine {
        CommandLine {
            program: "sleep".into(),
            args: vec![secs.into()],
            env: BTreeMap::new(),
        }
    }

    #[test]
    fn stop_all_stops_every_recorded_process_and_forgets_it() {
        // Proves processes outlive nothing but `stop_all`: both recorded
        // sleepers run, then both are gone and no pid file is left.
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let a = run.spawn("a", &sleeper("30")).unwrap();
        let b = run.spawn("b", &sleeper("31")).unwrap();
        assert_eq!(run.running_pid("a"), Some(a));
        assert_eq!(run.running_pid("b"), Some(b));
        let mut stopped = run.stop_all(Duration::from_secs(5)).unwrap();
        stopped.sort();
        assert_eq!(stopped, ["a", "b"]);
        assert!(run.recorded().is_empty());
        for pid in [a, b] {
            assert_eq!(start_time(pid), None, "pid {pid} still runs");
        }
    }

    #[test]
    fn a_reused_pid_is_not_taken_for_the_recorded_process() {
        // Proves a pid file naming a live process that is not the one we
        // started (here: this test process) is treated as gone, so `down`
        // never signals a stranger.
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        run.spawn("x", &sleeper("0")).unwrap();
        std::fs::write(run.pid_file("x"), format!("{}\n", std::process::id())).unwrap();
        assert_eq!(run.running_pid("x"), None);
        assert!(run.stop_all(Duration::from_secs(1)).unwrap().is_empty());
    }

    #[test]
    fn signal_with_wait_reports_the_pid_and_forgets_the_process() {
        // Proves a single process can be killed by name, and a second kill
        // finds nothing to do.
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let pid = run.spawn("n", &sleeper("30")).unwrap();
        let killed = run
            .signal("n", Signal::KILL, Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(killed, Some(pid));
        assert_eq!(run.signal("n", Signal::KILL, None).unwrap(), None);
    }
}
