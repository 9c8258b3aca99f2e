package main

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"

	"github.com/strata/chaos/cluster"
)

// A fault is injected by apply, which returns the function that heals it.
type fault struct {
	name  string
	apply func(n *nemesis) (heal func(), what string)
}

// faults the nemesis knows. Partitions act on the proxied links between
// nodes, so they pick among nodes whose incoming links are proxied (a node
// that joined later is reached at its own address).
var faults = map[string]fault{
	"kill-leader":   {"kill-leader", func(n *nemesis) (func(), string) { return n.kill(n.leader()) }},
	"kill-follower": {"kill-follower", func(n *nemesis) (func(), string) { return n.kill(n.follower()) }},
	"kill-random":   {"kill-random", func(n *nemesis) (func(), string) { return n.kill(n.random()) }},
	"pause-leader":  {"pause-leader", func(n *nemesis) (func(), string) { return n.pause(n.leader()) }},
	"pause-random":  {"pause-random", func(n *nemesis) (func(), string) { return n.pause(n.random()) }},
	"partition-leader": {"partition-leader", func(n *nemesis) (func(), string) {
		return n.isolate(n.proxied(n.leader()))
	}},
	"partition-random": {"partition-random", func(n *nemesis) (func(), string) {
		return n.isolate(n.proxied(n.random()))
	}},
	// One-way: the leader can no longer reach one follower, but the
	// follower still reaches the leader (a classic source of stale leaders).
	"partition-one-way": {"partition-one-way", func(n *nemesis) (func(), string) {
		l := n.leader()
		var followers []int
		for _, id := range n.cl.IDs() {
			if id != l && n.cl.Proxied(id) {
				followers = append(followers, id)
			}
		}
		if len(followers) == 0 {
			return func() {}, "skipped: no follower with proxied links"
		}
		f := followers[n.rng.Intn(len(followers))]
		n.cl.Link(l, f).Cut()
		return n.cl.HealLinks, fmt.Sprintf("cut link %d->%d", l, f)
	}},
	"delay-link": {"delay-link", func(n *nemesis) (func(), string) {
		a := n.proxied(n.random())
		b := n.proxied(n.other(a))
		if a == b {
			return func() {}, "skipped: fewer than two proxied nodes"
		}
		d := time.Duration(50+n.rng.Intn(200)) * time.Millisecond
		n.cl.Link(a, b).Delay(d)
		n.cl.Link(b, a).Delay(d)
		return n.cl.HealLinks, fmt.Sprintf("delay %d<->%d by %v", a, b, d)
	}},
	"restart-all": {"restart-all", func(n *nemesis) (func(), string) {
		for _, id := range n.cl.IDs() {
			n.cl.Kill(id)
		}
		return func() { _ = n.cl.HealAll() }, "kill -9 every node, then restart"
	}},
	"membership-change": {"membership-change", func(n *nemesis) (func(), string) { return n.replaceVoter() }},
	"snapshot-catchup":  {"snapshot-catchup", func(n *nemesis) (func(), string) { return n.snapshotCatchUp() }},
	"sigterm-leader":    {"sigterm-leader", func(n *nemesis) (func(), string) { return n.terminate(n.leader()) }},
	"sigterm-random":    {"sigterm-random", func(n *nemesis) (func(), string) { return n.terminate(n.random()) }},
	"rolling-restart":   {"rolling-restart", func(n *nemesis) (func(), string) { return n.rollingRestart() }},
	"slow-fsync":        {"slow-fsync", func(n *nemesis) (func(), string) { return n.slowFsync() }},
	"snapshot-race":     {"snapshot-race", func(n *nemesis) (func(), string) { return n.snapshotRace() }},
	"max-size":          {"max-size", func(n *nemesis) (func(), string) { return n.maxSize() }},
}

type nemesis struct {
	cl     *cluster.Cluster
	rng    *rand.Rand
	enable []fault
	log    []string
	start  time.Time
	// snapshots counts the snapshot-catchup faults that saw an install;
	// replaced the membership changes that swapped a voter.
	snapshots, replaced int
	// w, stores and client let the max-size nemesis write through both
	// front ends into the run's history, as client number client.
	w      *workload
	stores []kvStore
	client int
	// problems are failures of the cluster a fault revealed beyond what
	// the clients saw (a node that hung on SIGTERM); each fails the run.
	mu       sync.Mutex
	problems []string
}

func newNemesis(cl *cluster.Cluster, rng *rand.Rand, names string) *nemesis {
	n := &nemesis{cl: cl, rng: rng, start: time.Now()}
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		if name == "" || name == "none" {
			continue
		}
		f, ok := faults[name]
		if !ok {
			fatalf("unknown fault %q", name)
		}
		n.enable = append(n.enable, f)
	}
	return n
}

func (n *nemesis) leader() int {
	if l := n.cl.Leader(); l != 0 {
		return l
	}
	return n.random()
}

func (n *nemesis) follower() int {
	l := n.cl.Leader()
	ids := n.cl.IDs()
	for {
		id := ids[n.rng.Intn(len(ids))]
		if id != l {
			return id
		}
	}
}

func (n *nemesis) random() int { return n.cl.IDs()[n.rng.Intn(len(n.cl.IDs()))] }

// other is a member other than id (id itself when there is none).
func (n *nemesis) other(id int) int {
	var others []int
	for _, j := range n.cl.IDs() {
		if j != id {
			others = append(others, j)
		}
	}
	if len(others) == 0 {
		return id
	}
	return others[n.rng.Intn(len(others))]
}

// proxied is id when its incoming links are proxied, otherwise a member
// whose are (id when there is none).
func (n *nemesis) proxied(id int) int {
	if n.cl.Proxied(id) {
		return id
	}
	for _, j := range n.cl.IDs() {
		if n.cl.Proxied(j) {
			return j
		}
	}
	return id
}

func (n *nemesis) kill(id int) (func(), string) {
	n.cl.Kill(id)
	return func() { _ = n.cl.StartNode(id) }, fmt.Sprintf("kill -9 node %d", id)
}

func (n *nemesis) pause(id int) (func(), string) {
	n.cl.Pause(id)
	return func() { n.cl.Resume(id) }, fmt.Sprintf("SIGSTOP node %d", id)
}

func (n *nemesis) isolate(id int) (func(), string) {
	n.cl.Isolate(id)
	return n.cl.HealLinks, fmt.Sprintf("isolate node %d", id)
}

// run injects one fault per interval: it waits a random part of the
// interval, applies a fault, holds it 0.5–2.5 s, heals it, and waits for the
// gateway to reach a leader again (bounded), until stop.
func (n *nemesis) run(interval time.Duration, stop chan struct{}) {
	if len(n.enable) == 0 {
		return
	}
	sleep := func(d time.Duration) bool {
		select {
		case <-stop:
			return false
		case <-time.After(d):
			return true
		}
	}
	for {
		if !sleep(time.Duration(n.rng.Int63n(int64(interval)/2 + 1))) {
			return
		}
		f := n.enable[n.rng.Intn(len(n.enable))]
		at := time.Since(n.start)
		heal, what := f.apply(n)
		hold := time.Duration(500+n.rng.Intn(2000)) * time.Millisecond
		ok := sleep(hold)
		heal()
		n.log = append(n.log, fmt.Sprintf("%6.1fs %s: %s for %v", at.Seconds(), f.name, what, hold))
		if !ok {
			return
		}
		_ = n.cl.WaitGatewayLeader(10 * time.Second)
		if !sleep(interval / 2) {
			return
		}
	}
}
