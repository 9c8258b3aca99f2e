//! The placement loop on a simulated cluster of 100 nodes and 10,000
//! ranges of 3 replicas (docs/benchmarks.md, "Placement"): from a skewed
//! start to balance, then a node joining, then a node leaving; for each,
//! the rounds, the replicas added, the leader transfers, the data copied,
//! and how far the busiest and idlest nodes are from the mean.
//!
//!     cargo run --release -p strata-placement --example placement_sim

use strata_placement::sim::{Outcome, Spread, random_cluster, run};
use strata_placement::{ClusterView, Planner};

const MIB: u64 = 1 << 20;

fn row(step: &str, outcome: &Outcome, view: &ClusterView, reference: &str) {
    let replicas = Spread::of(&view.replicas_per_node());
    let leaders = Spread::of(&view.leaders_per_node());
    println!(
        "| {step} | {} | {} | {} | {} MiB{reference} | {}–{} (mean {:.0}, {:.1} %) | {}–{} (mean {:.0}, {:.1} %) |",
        outcome.rounds,
        outcome.replicas_added,
        outcome.leader_transfers,
        outcome.bytes_moved / MIB,
        replicas.min,
        replicas.max,
        replicas.mean,
        replicas.deviation() * 100.0,
        leaders.min,
        leaders.max,
        leaders.mean,
        leaders.deviation() * 100.0,
    );
}

fn main() {
    let planner = Planner::default();
    let mut view = random_cluster(100, 10_000, 20, 1);
    let replicas = Spread::of(&view.replicas_per_node());
    let leaders = Spread::of(&view.leaders_per_node());
    println!(
        "start: replicas per node {}–{} (mean {:.0}), leaders per node {}–{} (mean {:.0})",
        replicas.min, replicas.max, replicas.mean, leaders.min, leaders.max, leaders.mean
    );
    println!(
        "| step | rounds | replicas added | leader transfers | data copied | replicas per node | leaders per node |"
    );
    println!("|---|---|---|---|---|---|---|");
    let outcome = run(&planner, &mut view, 100_000);
    row("skewed start to balance", &outcome, &view, "");

    let total: u64 = view.ranges.values().map(|r| r.bytes).sum();
    view.nodes.insert(101);
    let outcome = run(&planner, &mut view, 100_000);
    let share = total * 3 / 101 / MIB;
    row(
        "node 101 joins",
        &outcome,
        &view,
        &format!(" (its share: {share} MiB)"),
    );

    let held: u64 = view
        .ranges
        .values()
        .filter(|r| r.replicas.contains(&42))
        .map(|r| r.bytes)
        .sum();
    view.nodes.remove(&42);
    let outcome = run(&planner, &mut view, 100_000);
    row(
        "node 42 leaves",
        &outcome,
        &view,
        &format!(" (it held {} MiB)", held / MIB),
    );
}
