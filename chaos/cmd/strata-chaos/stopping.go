package main

import (
	"fmt"
	"strings"
	"time"
)

// The nemeses that stop nodes gracefully: a node that gets SIGTERM drains,
// hands leadership over when it leads, and exits; stopGrace bounds how
// long that may take before the harness kills it and reports a hang.
const stopGrace = 10 * time.Second

// terminate stops node id with SIGTERM; heal restarts it.
func (n *nemesis) terminate(id int) (func(), string) {
	took, clean := n.cl.Terminate(id, stopGrace)
	heal := func() { _ = n.cl.StartNode(id) }
	if !clean {
		n.problem("SIGTERM: node %d did not exit within %v and was killed", id, stopGrace)
		return heal, fmt.Sprintf("SIGTERM node %d: did NOT exit within %v, killed", id, stopGrace)
	}
	return heal, fmt.Sprintf("SIGTERM node %d (exited in %v)", id, took.Round(time.Millisecond))
}

// rollingRestart stops every member in turn with SIGTERM, restarts it and
// waits until it has applied what the leader had committed when it came
// back, before going on to the next.
func (n *nemesis) rollingRestart() (func(), string) {
	var steps []string
	for _, id := range n.cl.IDs() {
		leader := n.cl.Leader()
		took, clean := n.cl.Terminate(id, stopGrace)
		step := fmt.Sprintf("%d stopped in %v", id, took.Round(time.Millisecond))
		if id == leader {
			step += " (leader)"
		}
		if !clean {
			n.problem("rolling restart: node %d did not exit within %v of SIGTERM and was killed", id, stopGrace)
			step = fmt.Sprintf("%d did NOT stop within %v, killed", id, stopGrace)
		}
		if err := n.cl.StartNode(id); err != nil {
			steps = append(steps, step+", restart failed: "+err.Error())
			break
		}
		_ = n.cl.WaitGatewayLeader(10 * time.Second)
		var target uint64
		if l := n.cl.Leader(); l != 0 {
			s, _ := localStatus(n.cl, l)
			target = s.Commit
		}
		start := time.Now()
		caughtUp := waitFor(20*time.Second, func() bool {
			s, ok := localStatus(n.cl, id)
			return ok && target > 0 && s.Applied >= target
		})
		if caughtUp {
			step += fmt.Sprintf(", caught up in %v", time.Since(start).Round(10*time.Millisecond))
		} else {
			step += ", not caught up within 20 s"
		}
		steps = append(steps, step)
	}
	return func() {}, "SIGTERM, restart and catch-up of each node in turn: " + strings.Join(steps, "; ")
}

// problem records something the nemesis saw go wrong in the cluster (not a
// client-visible violation, but one all the same: the run fails on it).
func (n *nemesis) problem(format string, a ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.problems = append(n.problems, fmt.Sprintf(format, a...))
}
