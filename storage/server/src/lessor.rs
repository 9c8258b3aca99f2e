//! When leases end. The leases themselves (their TTLs, the keys under
//! them) are replicated state (`strata_raft::state_machine` `lease`); when
//! one runs out is decided by the leader alone, from its own monotonic
//! clock, and ended by proposing its revoke, so every replica deletes its
//! keys at the same index.
//!
//! The leader counts each lease's TTL from the last keep-alive it answered
//! or, for a lease it has not been asked about, from when it first saw the
//! lease in its term: a new leader starts every lease's TTL afresh when it
//! takes office. A lease therefore never ends before its TTL has passed
//! since the last keep-alive any leader answered (the new leader took
//! office after the old one's last confirmed round), and may end up to an
//! election's time late. Followers keep nothing: their state is dropped
//! whenever this node does not lead.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use strata_raft::{ApplyResult, Command, PeerHandle, Role};
use tokio::sync::watch;
use tokio::time::Instant;

/// How often the leader looks for leases that ran out.
const CHECK_EVERY: Duration = Duration::from_millis(100);
/// How often the leader reads the lease table again for leases granted or
/// revoked meanwhile.
const REFRESH_EVERY: Duration = Duration::from_millis(500);
/// How long a revoke that failed (a leader change, a timeout) waits before
/// it is proposed again.
const REVOKE_RETRY: Duration = Duration::from_secs(1);

/// One lease as the leader counts it.
#[derive(Debug, Clone, Copy)]
struct Countdown {
    ttl: Duration,
    ends_at: Instant,
    /// Set while its revoke is proposed: not proposed again before this.
    revoking_until: Option<Instant>,
}

#[derive(Default)]
struct Counting {
    /// The term in which this node leads and counts; `None` while it does
    /// not lead.
    term: Option<u64>,
    leases: HashMap<u64, Countdown>,
    refreshed_at: Option<Instant>,
}

/// The leader's lease clock.
pub struct Lessor {
    peer: PeerHandle,
    counting: Mutex<Counting>,
}

/// What a keep-alive did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepAlive {
    /// The TTL runs again from now.
    Kept,
    /// The lease's TTL had run out: it is ending.
    Ended,
    /// This node no longer leads.
    NotLeading,
}

/// What the leader's clock says of one lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remaining {
    pub ttl: Duration,
    pub remaining: Duration,
}

impl Lessor {
    pub fn new(peer: PeerHandle) -> Arc<Self> {
        Arc::new(Lessor {
            peer,
            counting: Mutex::new(Counting::default()),
        })
    }

    /// The term this node leads in, if it leads.
    fn leading_term(&self) -> Option<u64> {
        let st = self.peer.status();
        (st.role == Role::Leader && st.leader_id == st.id).then_some(st.term)
    }

    /// Brings the count up to date with this node's role and the lease
    /// table: dropped when it does not lead; on taking office, every lease
    /// counted afresh; leases granted since the last read counted from
    /// now, revoked ones dropped. The table is read again every
    /// `REFRESH_EVERY`, or now when `fresh` (a linearizable read of the
    /// leases, which must see every grant and revoke applied before it).
    fn refresh(&self, now: Instant, fresh: bool) {
        let Some(term) = self.leading_term() else {
            *self.counting.lock() = Counting::default();
            return;
        };
        let due = {
            let c = self.counting.lock();
            fresh
                || c.term != Some(term)
                || c.refreshed_at
                    .is_none_or(|at| now.duration_since(at) >= REFRESH_EVERY)
        };
        if !due {
            return;
        }
        let table = match self.peer.state_machine().leases() {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(error = %e, "reading the lease table failed");
                return;
            }
        };
        let mut c = self.counting.lock();
        if c.term != Some(term) {
            if !table.is_empty() {
                tracing::info!(
                    term,
                    leases = table.len(),
                    "leading: every lease's TTL starts again from now"
                );
            }
            c.leases.clear();
            c.term = Some(term);
        }
        let mut kept = HashMap::with_capacity(table.len());
        for (id, ttl_ms) in table {
            let ttl = Duration::from_millis(ttl_ms);
            let countdown = c.leases.get(&id).copied().unwrap_or(Countdown {
                ttl,
                ends_at: now + ttl,
                revoking_until: None,
            });
            kept.insert(id, countdown);
        }
        c.leases = kept;
        c.refreshed_at = Some(now);
    }

    /// The leases that ran out and are not being revoked, marked as being
    /// revoked.
    fn expired(&self, now: Instant) -> Vec<u64> {
        let mut c = self.counting.lock();
        let mut out = Vec::new();
        for (id, countdown) in c.leases.iter_mut() {
            let waiting = countdown.revoking_until.is_some_and(|until| now < until);
            if countdown.ends_at <= now && !waiting {
                countdown.revoking_until = Some(now + REVOKE_RETRY);
                out.push(*id);
            }
        }
        out
    }

    /// Starts a new lease's TTL now (it was just granted).
    pub fn start(&self, id: u64, ttl_ms: u64) {
        let _ = self.keep_alive(id, ttl_ms, false);
    }

    /// Starts lease `id`'s TTL again now; the caller confirmed that this
    /// node leads and that the lease exists with `ttl_ms` (a ReadIndex
    /// round, then the state machine). A lease whose TTL has already run
    /// out is not kept: its revoke is on its way (or will be), and a
    /// keep-alive answered now could not keep its keys for a TTL.
    pub fn keep_alive(&self, id: u64, ttl_ms: u64, refuse_ended: bool) -> KeepAlive {
        let Some(term) = self.leading_term() else {
            return KeepAlive::NotLeading;
        };
        let now = Instant::now();
        let mut c = self.counting.lock();
        if c.term != Some(term) {
            // Not counted in this term yet: the next refresh starts every
            // lease afresh; this one from now too.
            drop(c);
            self.refresh(now, false);
            c = self.counting.lock();
        }
        if refuse_ended && c.leases.get(&id).is_some_and(|cd| cd.ends_at <= now) {
            return KeepAlive::Ended;
        }
        let ttl = Duration::from_millis(ttl_ms);
        c.leases.insert(
            id,
            Countdown {
                ttl,
                ends_at: now + ttl,
                revoking_until: None,
            },
        );
        KeepAlive::Kept
    }

    /// How long lease `id` has left by this leader's clock; `None` when it
    /// does not count it (not the leader, or no such lease).
    pub fn remaining(&self, id: u64) -> Option<Remaining> {
        self.refresh(Instant::now(), false);
        let c = self.counting.lock();
        let countdown = c.leases.get(&id)?;
        Some(Remaining {
            ttl: countdown.ttl,
            remaining: countdown.ends_at.saturating_duration_since(Instant::now()),
        })
    }

    /// Every lease this leader counts, by id, the table read afresh: after
    /// a read barrier it holds every grant and revoke applied before.
    pub fn all(&self) -> Option<Vec<(u64, Remaining)>> {
        let now = Instant::now();
        self.refresh(now, true);
        let c = self.counting.lock();
        c.term?;
        let mut out: Vec<(u64, Remaining)> = c
            .leases
            .iter()
            .map(|(id, cd)| {
                (
                    *id,
                    Remaining {
                        ttl: cd.ttl,
                        remaining: cd.ends_at.saturating_duration_since(now),
                    },
                )
            })
            .collect();
        out.sort_by_key(|(id, _)| *id);
        Some(out)
    }

    /// Forgets lease `id` (its revoke was applied).
    fn forget(&self, id: u64) {
        self.counting.lock().leases.remove(&id);
    }

    /// Proposes lease `id`'s revoke and forgets it once applied.
    async fn revoke(self: Arc<Self>, id: u64, timeout: Duration) {
        let proposed = self.peer.propose(Command::LeaseRevoke { id });
        match tokio::time::timeout(timeout, proposed).await {
            Ok(Ok((index, result))) => {
                if let ApplyResult::LeaseRevoked { keys } = result {
                    tracing::info!(lease = id, keys, index, "lease ran out: its keys deleted");
                }
                self.forget(id);
            }
            Ok(Err(e)) => tracing::debug!(lease = id, error = %e, "revoking a lease that ran out"),
            Err(_) => tracing::debug!(lease = id, "revoking a lease that ran out timed out"),
        }
    }
}

/// Runs the leader's lease clock until `stopping`: every `CHECK_EVERY`,
/// each lease that ran out is revoked.
pub fn spawn(
    lessor: Arc<Lessor>,
    request_timeout: Duration,
    mut stopping: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = crate::ticker::every(CHECK_EVERY);
        while crate::ticker::next(&mut tick, &mut stopping).await {
            let now = Instant::now();
            lessor.refresh(now, false);
            for id in lessor.expired(now) {
                tokio::spawn(lessor.clone().revoke(id, request_timeout));
            }
        }
    })
}
