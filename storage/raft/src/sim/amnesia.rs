//! Members whose disk was replaced, on the simulated network: they come
//! back under their old id with nothing but the bootstrap state (see
//! `driver/amnesia.rs`). A wiped follower whose leader still counts on it
//! stops with lost state at the first heartbeat; wiped voters never help a
//! member that lacks committed writes win an election.

use raft::StateRole;

use super::net::Weather;
use super::{QUIET_MS, Sim, seeds};

/// A group of five: two wiped voters and two lagging ones are a majority.
const FIVE: [u64; 5] = [1, 2, 3, 4, 5];
/// How long the leader stays cut off from everyone: many election
/// timeouts (10 to 20 ticks of 10 ms).
const CUT_MS: u64 = 1_500;

impl Sim {
    fn is_lost_state(&self, i: usize) -> bool {
        self.nodes[i]
            .live
            .as_ref()
            .is_some_and(|live| live.driver.status().lost_state().is_some())
    }
}

// Proves that a follower whose disk was replaced, started again as a fresh
// member under its old id while its leader still leads, fails with lost
// state at the leader's first heartbeat instead of panicking inside
// raft-rs ("to_commit … is out of range"), names the way back, and that
// the other two keep committing without it.
#[test]
fn wiped_follower_fails_with_lost_state_and_the_others_carry_on() {
    let mut sim = Sim::settled(17);
    let l = sim.leaders()[0];
    let f = (0..sim.nodes.len()).find(|&i| i != l).expect("a follower");
    let fid = sim.nodes[f].id;
    sim.nodes[f].wipe();
    sim.nodes[f].start();
    sim.step_until(500, "the wiped member reports lost state", |sim| {
        sim.is_lost_state(f)
    });
    let live = sim.nodes[f].live.as_ref().expect("it runs");
    let failure = live.driver.status().failure.expect("it failed");
    assert!(
        failure
            .reason
            .contains(&format!("`strata member remove {fid}`")),
        "{failure}"
    );
    assert_eq!(
        live.driver.raw().raft.raft_log.last_index(),
        crate::log::store::BOOTSTRAP_INDEX,
        "it stepped nothing after the heartbeat that proved the loss"
    );
    let mut ack = sim.write(l, "after-the-loss");
    let mut answer = None;
    sim.step_until(300, "a write is answered without the wiped member", |_| {
        if let Ok(r) = ack.try_recv() {
            answer = Some(r);
        }
        answer.is_some()
    });
    assert!(matches!(answer, Some(Ok(_))), "{answer:?}");
    assert!(sim.is_lost_state(f), "a failed member stays failed");
}

// Proves that voters holding only the bootstrap state do not elect a
// member that lacks committed writes. Five voters; the leader commits
// writes with two followers while the other two are cut off from it; then
// the leader is cut off from everyone and the two that acknowledged the
// writes lose their disks and come back empty. The two lagging members
// and the two wiped ones are a majority: had the wiped ones voted, a
// lagging member would have led and the writes would be gone. No member
// but the old leader may lead while it is cut off, and after healing every
// acknowledged write is on every member (the old leader wins again, and
// catches the wiped members up by snapshot). Every seed runs it, with its
// own delays, log policy and election timeouts.
#[test]
fn wiped_voters_do_not_elect_a_member_that_lacks_committed_writes() {
    let seeds = seeds(3);
    let mut at_risk = 0;
    for &seed in &seeds {
        let outcome = std::panic::catch_unwind(|| wiped_majority(seed))
            .unwrap_or_else(|_| Err("panicked (message above)".to_string()));
        match outcome {
            Ok(writes) => at_risk += writes,
            Err(e) => panic!("seed {seed} failed: {e}\nreplay with: SIM_SEED={seed}"),
        }
    }
    eprintln!(
        "{} seeds: {at_risk} writes committed only with the wiped members' acknowledgements, \
         none lost",
        seeds.len()
    );
}

/// The scenario on one seed; returns how many writes were acknowledged
/// with the help of the members then wiped.
fn wiped_majority(seed: u64) -> Result<usize, String> {
    let mut sim = Sim::with_voters(seed, &FIVE);
    // The seed's delays, duplicates and log policy, but no losses: the
    // scenario needs its leader to keep office until it is cut off.
    sim.weather = Weather {
        drop: 0.0,
        ..sim.weather
    };
    for i in 0..QUIET_MS {
        sim.step(false, i < QUIET_MS / 4)?;
    }
    let [l] = sim.leaders()[..] else {
        return Err("no single leader after settling".into());
    };
    let lid = sim.nodes[l].id;
    let others: Vec<usize> = (0..sim.nodes.len()).filter(|&i| i != l).collect();
    let (wiped, lagging) = others.split_at(2);
    for &i in lagging {
        sim.net.partition(lid, sim.nodes[i].id);
    }
    let acked = sim.acked.len();
    for _ in 0..5 {
        sim.propose();
    }
    for _ in 0..1_000 {
        if sim.pending.is_empty() {
            break;
        }
        sim.step(false, false)?;
    }
    let at_risk = sim.acked.len() - acked;
    if at_risk == 0 || sim.leaders() != [l] {
        return Err(format!(
            "the leader did not keep office and acknowledge the writes ({at_risk} acknowledged)"
        ));
    }
    for &i in wiped {
        sim.net.partition(lid, sim.nodes[i].id);
    }
    // What is already on the wire lands first: a heartbeat of the leader
    // they acknowledged to would (rightly) stop the wiped members.
    for _ in 0..=sim.weather.max_delay_ms {
        sim.step(false, false)?;
    }
    for &i in wiped {
        sim.note(("wipe", sim.nodes[i].id));
        sim.nodes[i].wipe();
        sim.nodes[i].start();
    }
    for _ in 0..CUT_MS {
        sim.step(false, false)?;
        if let Some(&i) = sim.leaders().iter().find(|&&i| i != l) {
            let raft = &sim.nodes[i].live.as_ref().expect("a leader runs").driver;
            let raft = &raft.raw().raft;
            return Err(format!(
                "node {} was elected in term {} with its log ending at {}, without the writes \
                 acknowledged before",
                sim.nodes[i].id,
                raft.term,
                raft.raft_log.last_index()
            ));
        }
    }
    let old_leader = sim.nodes[l].live.as_ref().expect("it runs");
    if old_leader.driver.raw().raft.state == StateRole::Leader {
        return Err("the cut-off leader never stepped down".into());
    }
    // Heals, lets the group settle with more writes, and checks that every
    // member holds every acknowledged write.
    sim.finish()?;
    for &i in wiped {
        if sim.is_lost_state(i) {
            return Err(format!("wiped node {} stopped", sim.nodes[i].id));
        }
    }
    Ok(at_risk)
}
