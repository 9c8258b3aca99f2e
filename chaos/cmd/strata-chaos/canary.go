package main

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/strata/chaos/cluster"
)

// The linear runs start every node with its consistency canary (`--canary`,
// see docs/operations.md): beside the harness's clients, each node checks a
// few reserved keys for linearizability on its own, in windows. A window the
// canary finds not linearizable fails the run like a Porcupine violation.
//
// A node's report (`GET /v1/canary`) covers only its current life: a restart
// starts it from zero. So the run polls every node's report while it goes,
// keeps the last one of each life, and counts the violation lines in the
// node's log, which every life appends to: a window checked just before a
// kill, between two polls, is still counted.

// canaryWindowSecs is the canaries' window in the chaos runs: short, so that
// a run of 15 s gives every node a few checked windows.
const canaryWindowSecs = 5

// canaryViolationLine is the error line a node logs once per window that
// was not linearizable.
const canaryViolationLine = "canary: history is not linearizable"

// canaryArgs turn the canary on, for every node of a linear run.
func canaryArgs() []string {
	return []string{"--canary", "--canary-window-secs", fmt.Sprint(canaryWindowSecs)}
}

// canaryLife is one start of one node, told apart by its process id.
type canaryLife struct{ node, pid int }

// canaryCounts is what the canaries checked in one run, every node and life
// together; it is written into result.json.
type canaryCounts struct {
	WindowsOk           uint64 `json:"windows_ok"`
	WindowsViolation    uint64 `json:"windows_violation"`
	WindowsInconclusive uint64 `json:"windows_inconclusive"`
	// Nodes and Lives: how many nodes, and starts of them, reported.
	Nodes int `json:"nodes"`
	Lives int `json:"lives"`
}

func (c canaryCounts) String() string {
	return fmt.Sprintf("windows %d ok, %d violation, %d inconclusive (%d nodes, %d lives)",
		c.WindowsOk, c.WindowsViolation, c.WindowsInconclusive, c.Nodes, c.Lives)
}

// canaryTally keeps the latest report of every node's every life.
type canaryTally struct {
	mu    sync.Mutex
	lives map[canaryLife]cluster.CanaryReport
}

func newCanaryTally() *canaryTally {
	return &canaryTally{lives: map[canaryLife]cluster.CanaryReport{}}
}

// observe records a report read from node's process pid. Within one life the
// counts only grow; a report that was read just as the node restarted may
// belong to the next life, so each count keeps its largest value.
func (t *canaryTally) observe(node, pid int, r cluster.CanaryReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	life := canaryLife{node, pid}
	old, seen := t.lives[life]
	if seen {
		r.Enabled = r.Enabled && old.Enabled
		r.WindowsOk = max(r.WindowsOk, old.WindowsOk)
		r.WindowsViolation = max(r.WindowsViolation, old.WindowsViolation)
		r.WindowsInconclusive = max(r.WindowsInconclusive, old.WindowsInconclusive)
		if r.LastViolation == nil {
			r.LastViolation = old.LastViolation
		}
	}
	t.lives[life] = r
}

// counts sums every life's report.
func (t *canaryTally) counts() canaryCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c canaryCounts
	nodes := map[int]bool{}
	for life, r := range t.lives {
		nodes[life.node] = true
		c.Lives++
		c.WindowsOk += r.WindowsOk
		c.WindowsViolation += r.WindowsViolation
		c.WindowsInconclusive += r.WindowsInconclusive
	}
	c.Nodes = len(nodes)
	return c
}

// problems are what fails the run: a node whose canary is not running, and
// every node whose canary found a window not linearizable, by its reports or
// by its log (logged: violation lines per node), whichever saw more.
func (t *canaryTally) problems(logged map[int]int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	reported := map[int]uint64{}
	last := map[int]string{}
	disabled := map[int]bool{}
	for life, r := range t.lives {
		reported[life.node] += r.WindowsViolation
		if !r.Enabled {
			disabled[life.node] = true
		}
		if v := r.LastViolation; v != nil {
			last[life.node] = fmt.Sprintf("; last: window %s, key %s", v.Window, v.Key)
		}
	}
	nodes := map[int]bool{}
	for n := range reported {
		nodes[n] = true
	}
	for n := range logged {
		nodes[n] = true
	}
	var ids []int
	for n := range nodes {
		ids = append(ids, n)
	}
	sort.Ints(ids)
	var out []string
	for _, n := range ids {
		if disabled[n] {
			out = append(out, fmt.Sprintf("node %d does not run its canary (GET /v1/canary: enabled false)", n))
		}
		if found := max(reported[n], uint64(logged[n])); found > 0 {
			out = append(out, fmt.Sprintf("node %d's canary found %d window(s) not linearizable%s (its log has the histories)",
				n, found, last[n]))
		}
	}
	return out
}

// canaryWatch polls every running, unpaused node's canary report into a
// tally until stopped.
type canaryWatch struct {
	cl    *cluster.Cluster
	tally *canaryTally
	stop  chan struct{}
	done  chan struct{}
}

func watchCanaries(cl *cluster.Cluster, every time.Duration) *canaryWatch {
	w := &canaryWatch{cl: cl, tally: newCanaryTally(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.poll()
			}
		}
	}()
	return w
}

// poll reads every reachable node's report once.
func (w *canaryWatch) poll() {
	for _, id := range w.cl.IDs() {
		pid := w.cl.Pid(id)
		if pid == 0 || w.cl.Paused(id) {
			continue
		}
		if r, err := w.cl.Canary(id, time.Second); err == nil && w.cl.Pid(id) == pid {
			w.tally.observe(id, pid, r)
		}
	}
}

// finish stops polling and reads every node once more, at the end of the
// run: each must answer (a node that does not is a problem of the run).
// It returns the counts and the run's problems.
func (w *canaryWatch) finish() (canaryCounts, []string) {
	close(w.stop)
	<-w.done
	var problems []string
	for _, id := range w.cl.IDs() {
		pid := w.cl.Pid(id)
		r, err := w.cl.Canary(id, 5*time.Second)
		if err != nil {
			problems = append(problems, "canary report: "+err.Error())
			continue
		}
		w.tally.observe(id, pid, r)
	}
	logged := map[int]int{}
	for id := 1; id <= w.cl.Slots(); id++ {
		if n := countInFile(w.cl.NodeLog(id), canaryViolationLine); n > 0 {
			logged[id] = n
		}
	}
	return w.tally.counts(), append(problems, w.tally.problems(logged)...)
}
