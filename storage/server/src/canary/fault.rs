//! The one test-only fault the canary is checked against: linearizable
//! reads served from this node's local state without the ReadIndex round,
//! so a follower that lags serves stale reads. It exists so that a test can
//! show the canary catches what it is there to catch; a node refuses it
//! unless `STRATA_ALLOW_FAULTS=1` is set.

/// The environment variable that must be `1` for a fault flag to be taken.
pub const ALLOW_FAULTS_ENV: &str = "STRATA_ALLOW_FAULTS";

/// Test-only faults (hidden from `--help`'s short form).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Faults {
    /// TEST ONLY, breaks linearizability: serve linearizable reads from local
    /// state without confirming it is current. Refused unless
    /// STRATA_ALLOW_FAULTS=1.
    #[arg(long = "fault-stale-reads", hide_short_help = true)]
    pub stale_reads: bool,
}

impl Faults {
    /// Whether any fault is asked for.
    pub fn any(&self) -> bool {
        self.stale_reads
    }

    /// Refuses faults unless the environment allows them (`allowed` is the
    /// value of [`ALLOW_FAULTS_ENV`]).
    pub fn check(&self, allowed: Option<&str>) -> Result<(), String> {
        if self.any() && allowed != Some("1") {
            return Err(format!(
                "--fault-stale-reads is a test-only fault that breaks linearizability; \
                 set {ALLOW_FAULTS_ENV}=1 to really run it"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_without_the_environment_switch_is_refused() {
        let faults = Faults { stale_reads: true };
        assert!(faults.check(None).is_err());
        assert!(faults.check(Some("0")).is_err());
        assert!(faults.check(Some("1")).is_ok());
        assert!(Faults::default().check(None).is_ok());
    }
}
