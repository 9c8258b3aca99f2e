//! Members whose disk was replaced, on the simulated network: they come
//! back under their old id with nothing but the bootstrap state (see
//! `driver/amnesia.rs` and `driver/vouching.rs`). A wiped follower is
//! caught up as a new life of its member; one that lost its log but kept
//! its identity stops with lost state; wiped voters never help a member
//! that lacks committed writes win an election, before or after they were
//! caught up by snapshot.

use raft::StateRole;
use strata_fs::FileSystem as _;

use super::net::Weather;
use super::{QUIET_MS, Sim, seeds};

/// A group of five: two wiped voters and two lagging ones are a majority.
const FIVE: [u64; 5] = [1, 2, 3, 4, 5];
/// How long the leader stays cut off from everyone: many election
/// timeouts (10 to 20 ticks of 10 ms).
const CUT_MS: u64 = 1_500;

impl Sim {
    /// Node `i`'s incarnation and whether it is proven.
    fn identity(&self, i: usize) -> (u64, bool) {
        let live = self.nodes[i].live.as_ref().expect("it runs");
        (live.shared.stamps.incarnation(), live.driver.is_proven())
    }

    fn is_lost_state(&self, i: usize) -> bool {
        self.nodes[i]
            .live
            .as_ref()
            .is_some_and(|live| live.driver.status().lost_state().is_some())
    }
}

// Proves that a follower whose disk was replaced, started again as a fresh
// member under its old id while its leader still leads, is caught up as a
// new life of that member instead of panicking inside raft-rs ("to_commit
// … is out of range") or stopping: it comes back unproven under a new
// incarnation, its leader drops what it counted of the old life, catches
// it up and vouches for it, and it then holds every acknowledged write.
// The others carry on meanwhile.
#[test]
fn wiped_follower_comes_back_as_a_new_life_and_is_caught_up() {
    let mut sim = Sim::settled(17);
    let l = sim.leaders()[0];
    let f = (0..sim.nodes.len()).find(|&i| i != l).expect("a follower");
    let old = sim.identity(f);
    assert!(old.1, "a settled member is proven");
    sim.nodes[f].wipe();
    sim.nodes[f].start();
    let new = sim.identity(f);
    assert_ne!(new.0, old.0, "an emptied disk is a new incarnation");
    assert!(!new.1, "and is not proven");
    let mut ack = sim.write(l, "after-the-loss");
    sim.step_until(2_000, "the leader vouches for the wiped member", |sim| {
        sim.identity(f).1
    });
    assert!(!sim.is_lost_state(f));
    assert!(
        matches!(ack.try_recv(), Ok(Ok(_))),
        "the others committed meanwhile"
    );
    let leader_commit = sim.nodes[l]
        .live
        .as_ref()
        .expect("the leader runs")
        .driver
        .raw()
        .raft
        .raft_log
        .committed;
    assert!(
        last_index(&sim, f) >= leader_commit.min(sim.acked_index),
        "vouched for, it holds what was acknowledged"
    );
    sim.finish()
        .expect("every member holds every acknowledged write");
}

// Proves that a member whose raft log was lost while its identity stayed
// (a disk that kept less than it synced) fails with lost state at the
// first heartbeat of a leader that counted this very life, names the way
// back, and that the others carry on.
#[test]
fn a_log_lost_under_a_kept_identity_fails_with_lost_state() {
    let mut sim = Sim::settled(17);
    let l = sim.leaders()[0];
    let f = (0..sim.nodes.len()).find(|&i| i != l).expect("a follower");
    let fid = sim.nodes[f].id;
    let identity = sim.nodes[f]
        .fs
        .read_all(std::path::Path::new("/raft/identity"))
        .expect("the identity file");
    sim.nodes[f].wipe();
    let fs = &sim.nodes[f].fs;
    fs.create_dir_durable(std::path::Path::new("/raft"))
        .expect("dir");
    let file = fs
        .create(std::path::Path::new("/raft/identity"))
        .expect("create");
    file.append(&identity).expect("write");
    file.sync().expect("sync");
    sim.nodes[f].start();
    sim.step_until(500, "the member reports lost state", |sim| {
        sim.is_lost_state(f)
    });
    let live = sim.nodes[f].live.as_ref().expect("it runs");
    let failure = live.driver.status().failure.expect("it failed");
    assert!(
        failure.reason.contains("Empty its data directory")
            && failure
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
    sim.step_until(300, "a write is answered without the member", |_| {
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
    let at_risk = acknowledge_writes(&mut sim, l)?;
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

// Proves that a wiped voter which a new leader caught up by snapshot does
// not vote before it holds what it had acknowledged. Five voters; the
// leader commits writes with followers A and B while C and D are cut off
// from it, and B never hears that they committed. The leader is then cut
// off; A loses its disk and comes back empty; B wins the election with C
// and D (its log is the longest) but its appends carrying the writes are
// held back, so C and D still lack them, and B, which does not know them
// committed, catches A up with a snapshot taken before them. Then B is cut
// off too. A, C and D are a majority that lacks the writes: had A voted,
// C or D would have led and the writes would be gone.
#[test]
fn a_wiped_voter_caught_up_by_snapshot_does_not_vote_until_vouched_for() {
    let seeds = seeds(3);
    let (mut at_risk, mut set_up) = (0, 0);
    for &seed in &seeds {
        let outcome = std::panic::catch_unwind(|| snapshot_then_vote(seed))
            .unwrap_or_else(|_| Err("panicked (message above)".to_string()));
        match outcome {
            Ok(Some(writes)) => {
                at_risk += writes;
                set_up += 1;
            }
            Ok(None) => {}
            Err(e) => panic!("seed {seed} failed: {e}\nreplay with: SIM_SEED={seed}"),
        }
    }
    eprintln!(
        "{} seeds, {set_up} of them setting the scene: {at_risk} writes committed with a wiped \
         member's acknowledgement, none lost",
        seeds.len()
    );
    assert!(
        set_up * 2 >= seeds.len(),
        "only {set_up} of {} seeds set the scene",
        seeds.len()
    );
}

/// The scenario on one seed; returns how many writes were acknowledged
/// with the help of the member then wiped, or `None` when the seed's
/// timing did not set the scene (B did not lead, or A got the writes).
fn snapshot_then_vote(seed: u64) -> Result<Option<usize>, String> {
    let mut sim = Sim::with_voters(seed, &FIVE);
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
    let id = |sim: &Sim, i: usize| sim.nodes[i].id;
    let lid = id(&sim, l);
    let others: Vec<usize> = (0..sim.nodes.len()).filter(|&i| i != l).collect();
    let (a, b, lagging) = (others[0], others[1], &others[2..]);
    let (aid, bid) = (id(&sim, a), id(&sim, b));
    for &i in lagging {
        sim.net.partition(lid, id(&sim, i));
    }
    // Let what is on the wire land, so that the writes start from a quiet
    // log.
    for _ in 0..=sim.weather.max_delay_ms * 2 {
        sim.step(false, false)?;
    }
    let first_write = last_index(&sim, l) + 1;
    // B acknowledges the writes but never learns that they committed.
    sim.net.hold(Some(Box::new(move |m| {
        m.from == lid && m.to == bid && m.commit >= first_write
    })));
    let at_risk = acknowledge_writes(&mut sim, l)?;
    for &i in &others {
        sim.net.partition(lid, id(&sim, i));
    }
    for _ in 0..=sim.weather.max_delay_ms {
        sim.step(false, false)?;
    }
    // From now on no append that would give A, C or D the writes leaves
    // B (A, lacking B's log, refuses the first ones, which are let through
    // so that B learns that A needs a snapshot).
    sim.net.hold(Some(Box::new(move |m| {
        let carries_writes = m.get_msg_type() == raft::eraftpb::MessageType::MsgAppend
            && m.entries.iter().any(|e| e.index >= first_write);
        (m.from == lid && m.to == bid && m.commit >= first_write)
            || (m.from == bid && carries_writes && (m.to != aid || m.index < first_write))
    })));
    sim.note(("wipe", aid));
    sim.nodes[a].wipe();
    sim.nodes[a].start();
    let mut caught_up = false;
    for _ in 0..5_000 {
        sim.step(false, false)?;
        if let Some(&i) = sim.leaders().iter().find(|&&i| i != l && i != b) {
            return Err(format!(
                "node {} led without the writes while B could still win",
                id(&sim, i)
            ));
        }
        if last_index(&sim, a) > crate::log::store::BOOTSTRAP_INDEX {
            caught_up = true;
            break;
        }
    }
    if !caught_up || !sim.leaders().contains(&b) || last_index(&sim, a) >= first_write {
        sim.note(("scene not set", last_index(&sim, a), first_write));
        return Ok(None);
    }
    for &i in &others {
        if i != b {
            sim.net.partition(bid, id(&sim, i));
        }
    }
    for _ in 0..CUT_MS {
        sim.step(false, false)?;
        if let Some(&i) = sim.leaders().iter().find(|&&i| i != l && i != b) {
            let raft = &sim.nodes[i].live.as_ref().expect("a leader runs").driver;
            let raft = &raft.raw().raft;
            return Err(format!(
                "node {} was elected in term {} with its log ending at {}, without the writes \
                 from index {first_write} on",
                id(&sim, i),
                raft.term,
                raft.raft_log.last_index()
            ));
        }
    }
    sim.net.hold(None);
    sim.finish()?;
    Ok(Some(at_risk))
}

/// Proposes five writes on leader `l` and waits for their answers; returns
/// how many were acknowledged, an error unless some were while `l` kept
/// office.
fn acknowledge_writes(sim: &mut Sim, l: usize) -> Result<usize, String> {
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
    Ok(at_risk)
}

fn last_index(sim: &Sim, i: usize) -> u64 {
    sim.nodes[i]
        .live
        .as_ref()
        .map_or(0, |live| live.driver.raw().raft.raft_log.last_index())
}
