//! A token bucket that paces compaction writes, so that background work
//! leaves disk bandwidth (and fsync latency) for foreground writes.

use std::time::{Duration, Instant};

/// Allows `bytes_per_sec` on average, with bursts of up to one tenth of a
/// second's worth. A rate of 0 means unlimited.
pub(crate) struct RateLimiter {
    bytes_per_sec: u64,
    /// Bytes that may be written now without waiting; negative is debt.
    available: f64,
    last: Instant,
}

impl RateLimiter {
    pub(crate) fn new(bytes_per_sec: u64, now: Instant) -> RateLimiter {
        RateLimiter {
            bytes_per_sec,
            available: 0.0,
            last: now,
        }
    }

    /// Charges `bytes` written at `now` and returns how long the writer
    /// should pause before writing more. Pure (the caller sleeps), so it is
    /// tested without a clock.
    pub(crate) fn charge(&mut self, bytes: u64, now: Instant) -> Duration {
        if self.bytes_per_sec == 0 {
            return Duration::ZERO;
        }
        let rate = self.bytes_per_sec as f64;
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        let burst = rate / 10.0;
        self.available = (self.available + elapsed * rate).min(burst) - bytes as f64;
        if self.available >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.available / rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that a writer over the rate is told to wait exactly as long as
    // its debt takes to repay, that idle time refills the bucket only up to
    // the burst, and that rate 0 never waits.
    #[test]
    fn charge_returns_debt_over_rate() {
        let t0 = Instant::now();
        let mut limiter = RateLimiter::new(1000, t0);
        assert_eq!(limiter.charge(500, t0), Duration::from_millis(500));
        // After the debt is repaid and a long idle period, only 100 bytes
        // (a tenth of a second) of burst are available.
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(limiter.charge(100, t1), Duration::ZERO);
        assert_eq!(limiter.charge(100, t1), Duration::from_millis(100));
        let mut unlimited = RateLimiter::new(0, t0);
        assert_eq!(unlimited.charge(u64::MAX, t0), Duration::ZERO);
    }
}
