//! A learner is made a voter only once it has caught up.

use raft::eraftpb::ConfChangeType;
use tokio::sync::oneshot;

use super::Sim;
use super::conf_recovery::conf_change;
use crate::error::ProposeError;
use crate::mailbox::Input;

// Proves that the leader refuses to make a learner a voter while the
// learner lacks many committed entries (here it was cut off while the
// group took 200 writes), saying so and proposing nothing, and promotes it
// once it has caught up (asked again, as the server asks until its
// deadline).
#[test]
fn learner_is_promoted_only_once_it_has_caught_up() {
    let mut sim = Sim::settled(33);
    let leader = sim.nodes[sim.leaders()[0]].id;
    sim.learner_joined(leader, 4);
    let l = sim.index_of(leader);
    let learner = sim.index_of(4);
    sim.isolate(learner);
    let mut acks: Vec<_> = (0..200).map(|i| sim.write(l, &format!("k{i}"))).collect();
    sim.step_until(1_000, "the writes are acknowledged", |_| {
        acks.iter_mut()
            .all(|a| !matches!(a.try_recv(), Err(oneshot::error::TryRecvError::Empty)))
    });
    let promote = || conf_change(&[(ConfChangeType::AddNode, 4)]);
    let (tx, mut rx) = oneshot::channel();
    let live = sim.nodes[l].live.as_mut().expect("the leader runs");
    let before = live.driver.raw().raft.raft_log.last_index();
    live.driver.handle(Input::ChangeMembers {
        change: promote(),
        tx,
    });
    let after = live.driver.raw().raft.raft_log.last_index();
    match rx.try_recv() {
        Ok(Err(ProposeError::Dropped(why))) => {
            assert!(why.contains("has not caught up"), "{why}");
            assert_eq!(after, before, "the refused change was appended");
        }
        other => panic!(
            "the promotion of a learner {} entries behind was not refused: {other:?}",
            sim.applied_of(leader) - sim.applied_of(4)
        ),
    }
    sim.net.heal();
    sim.step_until(2_000, "the learner catches up", |s| {
        s.applied_of(4) == s.applied_of(leader)
    });
    sim.change_applied(leader, promote());
    assert!(sim.conf_of(leader).voters.contains(&4));
}
