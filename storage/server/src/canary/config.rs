//! The canary's flags, flattened into the node's command line.

/// The consistency canary (see `docs/operations.md`).
#[derive(Debug, Clone, clap::Args)]
pub struct CanaryConfig {
    /// Run the consistency canary: a few reads, writes and compare-and-swaps
    /// a second on reserved keys (prefix `__strata_canary/`), through the
    /// same path a client's requests take, checked for linearizability.
    #[arg(long = "canary", env = "STRATA_CANARY")]
    pub enabled: bool,
    /// The canary's operations per second, all its workers together.
    #[arg(long = "canary-rate", env = "STRATA_CANARY_RATE", default_value_t = 4.0,
          value_parser = positive_rate)]
    pub rate: f64,
    /// Concurrent canary workers.
    #[arg(long = "canary-workers", env = "STRATA_CANARY_WORKERS", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=32))]
    pub workers: u16,
    /// Seconds of history each check covers; every window uses fresh keys.
    #[arg(long = "canary-window-secs", env = "STRATA_CANARY_WINDOW_SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    pub window_secs: u64,
}

impl Default for CanaryConfig {
    fn default() -> Self {
        CanaryConfig {
            enabled: false,
            rate: 4.0,
            workers: 4,
            window_secs: 10,
        }
    }
}

fn positive_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if rate.is_finite() && rate > 0.0 && rate <= 1000.0 {
        Ok(rate)
    } else {
        Err("the canary rate must be above 0 and at most 1000 operations a second".into())
    }
}
