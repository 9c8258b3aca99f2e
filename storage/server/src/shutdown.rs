//! The first part of a graceful stop, while the node still serves: it
//! refuses new requests (503, certainly not applied, which the gateway
//! sends on to another node), lets the requests it took finish, and, in
//! each raft group it leads, hands leadership to the voter whose log
//! matches its own furthest and waits until that voter leads (all groups
//! at once). Every step is bounded and logged; a
//! step that runs out of time leaves the rest to the stop itself, whose
//! answers stay true (a write already in raft is answered "outcome
//! unknown").
//!
//! The requests in flight finish before the hand-over, not after it: a
//! leader that steps down answers the writes it still waits for as "outcome
//! unknown", although the next leader will most likely commit them. Reads
//! are refused too: a read taken after the hand-over would wait for the new
//! leader's answer, which stops arriving once the raft transport closes.

use std::time::{Duration, Instant};

use strata_raft::PeerHandle;

use crate::config::Timing;

/// How long the requests taken before the refusal get to finish.
const REQUESTS_LIMIT: Duration = Duration::from_secs(1);
/// How often the peer is looked at while waiting.
const POLL: Duration = Duration::from_millis(5);

/// Refuses new requests, lets those in flight finish, and hands leadership
/// over in each of `groups` this node leads; returns once done or out of
/// time.
pub async fn drain_and_hand_over(groups: &[PeerHandle], timing: &Timing) {
    let Some(id) = groups.first().map(|g| g.status().id) else {
        return;
    };
    for group in groups {
        group.drain();
    }
    tracing::info!(
        id,
        "shutdown: refusing new requests (503: not applied, sent on by the gateway)"
    );
    finish_requests(groups).await;
    futures::future::join_all(groups.iter().map(|group| hand_over(group, timing))).await;
}

/// Waits up to [`REQUESTS_LIMIT`] for the requests taken before the refusal.
async fn finish_requests(groups: &[PeerHandle]) {
    let in_flight = || {
        groups
            .iter()
            .map(PeerHandle::requests_in_flight)
            .sum::<usize>()
    };
    let started = Instant::now();
    let finished = wait_until(REQUESTS_LIMIT, || in_flight() == 0).await;
    let waited_ms = started.elapsed().as_millis() as u64;
    if finished {
        tracing::info!(waited_ms, "shutdown: requests in flight finished");
    } else {
        tracing::warn!(
            waited_ms,
            left = in_flight(),
            "shutdown: requests still in flight; writes among them will be answered as of unknown outcome"
        );
    }
}

/// If this node leads, hands leadership to the most caught-up voter and
/// waits, for at most two of the longest election timeouts, until another
/// node leads.
async fn hand_over(peer: &PeerHandle, timing: &Timing) {
    let (id, group) = (peer.status().id, peer.status().group_id);
    let h = match peer.hand_over_leadership().await {
        Ok(Some(h)) => h,
        Ok(None) => {
            tracing::info!(
                group,
                "shutdown: not leading, or the only voter; nothing to hand over"
            );
            return;
        }
        Err(e) => {
            tracing::warn!(group, error = %e, "shutdown: cannot hand leadership over");
            return;
        }
    };
    tracing::info!(
        group,
        to = h.to,
        match_index = h.match_index,
        last_index = h.last_index,
        "shutdown: handing leadership over"
    );
    // raft-rs randomizes the election timeout up to twice its setting.
    let limit = 4 * Duration::from_millis(timing.tick_ms) * timing.election_ticks as u32;
    let started = Instant::now();
    let moved = wait_until(limit, || {
        let st = peer.status();
        st.leader_id != 0 && st.leader_id != id
    })
    .await;
    let waited_ms = started.elapsed().as_millis() as u64;
    let leader = peer.status().leader_id;
    if moved {
        tracing::info!(group, leader, waited_ms, "shutdown: leadership moved");
    } else {
        tracing::warn!(
            group,
            leader,
            waited_ms,
            "shutdown: leadership did not move in time; stopping anyway"
        );
    }
}

/// Polls `done` until it holds or `limit` passes; whether it held.
async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}
