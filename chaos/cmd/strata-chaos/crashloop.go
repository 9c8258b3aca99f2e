package main

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/strata/chaos/cluster"
	"github.com/strata/chaos/history"
)

// cmdCrashLoop kills random nodes with kill -9 and restarts them, cycle
// after cycle, while writers put unique keys through the gateway; at the
// end every acknowledged key must hold its acknowledged value, read
// linearizably through the gateway and on every node after convergence.
func cmdCrashLoop(args []string) int {
	var c common
	fs := c.flagSet("crashloop", 22100)
	cycles := fs.Int("cycles", 100, "kill -9 / restart cycles")
	writers := fs.Int("writers", 4, "concurrent writers")
	maxWrites := fs.Int("max-writes", 200000, "bound on writes")
	leaderBias := fs.Int("leader-percent", 34, "percent of cycles that kill the current leader")
	c.parse(fs, args)
	fmt.Printf("strata-chaos crashloop: %d cycles, %d writers, seed %d; run dir %s\n", *cycles, *writers, c.seed, c.runDir)
	start := time.Now()
	cl := startCluster(c.config("cluster", 3))
	rng := rand.New(rand.NewSource(c.seed))
	kv := gatewayClient(cl, 6*time.Second)
	rec := history.NewRecorder(*maxWrites)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < *writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				op := history.Op{Client: w, Kind: history.Put, Key: fmt.Sprintf("crash/%d/%d", w, seq),
					Value: fmt.Sprintf("v%d.%d", w, seq)}
				if !issue(kv, rec, &op) {
					return
				}
			}
		}(w)
	}

	var log []string
	failures := []string{}
	for i := 0; i < *cycles; i++ {
		id := cl.IDs()[rng.Intn(3)]
		if rng.Intn(100) < *leaderBias {
			if l := cl.Leader(); l != 0 {
				id = l
			}
		}
		cl.Kill(id)
		down := time.Duration(50+rng.Intn(400)) * time.Millisecond
		time.Sleep(down)
		if err := cl.StartNode(id); err != nil {
			failures = append(failures, fmt.Sprintf("cycle %d: restart of node %d: %v", i, id, err))
			break
		}
		// Let the node come back before the next victim, so a quorum stays
		// possible; a cluster that never recovers is itself a failure.
		if err := waitLive(cl, id, 30*time.Second); err != nil {
			failures = append(failures, fmt.Sprintf("cycle %d: %v", i, err))
			break
		}
		log = append(log, fmt.Sprintf("cycle %d: kill -9 node %d, down %v", i, id, down))
		if (i+1)%10 == 0 {
			fmt.Printf("  %d cycles, %d writes recorded (%.0f s)\n", i+1, len(rec.Ops()), time.Since(start).Seconds())
		}
	}
	close(stop)
	wg.Wait()

	if err := cl.HealAll(); err != nil {
		failures = append(failures, "restart after the loop: "+err.Error())
	}
	if err := cl.WaitGatewayLeader(60 * time.Second); err != nil {
		failures = append(failures, err.Error())
	}
	state, err := cl.WaitConverged(60 * time.Second)
	if err != nil {
		failures = append(failures, "nodes did not converge: "+err.Error())
	}
	ops := rec.Ops()
	counts := history.Counts(ops)
	if state != nil {
		failures = append(failures, checkUnacknowledged(ops, state)...)
	}
	lost, checked := 0, 0
	// What became of the writes that were not acknowledged, by answer: it
	// shows whether an "outcome unknown" was in fact ever applied.
	fate := map[string]int{}
	for _, op := range ops {
		if op.Result != history.Ok && state != nil {
			_, present := state[op.Key]
			note := op.Note
			if i := strings.IndexAny(note, "(;"); i > 0 {
				note = note[:i]
			}
			fate[fmt.Sprintf("%s %s → present=%v", op.Result, truncate(note, 70), present)]++
		}
		if op.Result != history.Ok {
			continue
		}
		checked++
		g := history.Op{Kind: history.Get, Key: op.Key}
		kv.Get(&g)
		for attempt := 0; g.Result != history.Ok && attempt < 10; attempt++ {
			time.Sleep(200 * time.Millisecond)
			kv.Get(&g)
		}
		if g.Result != history.Ok || !g.Found || g.Got != op.Value {
			lost++
			if lost <= 10 {
				failures = append(failures, fmt.Sprintf("acknowledged %s=%q reads back as found=%v %q (%s %s)",
					op.Key, op.Value, g.Found, g.Got, g.Result, g.Note))
			}
		}
		if v, ok := state[op.Key]; state != nil && (!ok || v != op.Value) {
			failures = append(failures, fmt.Sprintf("acknowledged %s=%q missing from converged node state", op.Key, op.Value))
		}
	}
	if dead := cl.Exited(); len(dead) > 0 {
		failures = append(failures, fmt.Sprintf("nodes %v exited on their own", dead))
	}
	_ = history.Save(filepath.Join(c.runDir, "history.json"), ops)
	sort.Strings(failures)
	summary := map[string]any{"unacknowledged_fate": fate, "cycles": len(log), "writes": len(ops), "outcomes": counts, "acknowledged_checked": checked,
		"lost": lost, "failures": failures, "seed": c.seed, "duration_s": time.Since(start).Seconds(), "log": log}
	writeResult(c.runDir, summary)
	fmt.Printf("crashloop: %d cycles, %d writes %v, %d acknowledged checked, %d lost, %d failures (%.0f s)\n",
		len(log), len(ops), counts, checked, lost, len(failures), time.Since(start).Seconds())
	var fates []string
	for k, v := range fate {
		fates = append(fates, fmt.Sprintf("  %5d %s", v, k))
	}
	sort.Strings(fates)
	fmt.Println(strings.Join(fates, "\n"))
	code := exitCode(failures)
	if code != 0 {
		fmt.Printf("  run dir %s\n  reproduce: (cd chaos && go run ./cmd/strata-chaos crashloop -cycles %d -seed %d)\n",
			c.runDir, *cycles, c.seed)
	}
	return code
}

// checkUnacknowledged checks the writes that were not acknowledged against
// the converged state: every key holds a value some attempt wrote to it
// (a refused write is retried under a new value, "r1", "r2", ..., on the
// same key), and no value refused as "not applied" (503) is present.
func checkUnacknowledged(ops []history.Op, state map[string]string) []string {
	written := map[string]map[string]bool{}
	for _, op := range ops {
		if op.Kind != history.Put {
			continue
		}
		if written[op.Key] == nil {
			written[op.Key] = map[string]bool{}
		}
		written[op.Key][op.Value] = true
	}
	var failures []string
	for _, op := range ops {
		if op.Kind != history.Put || op.Result == history.Ok {
			continue
		}
		v, present := state[op.Key]
		if present && !written[op.Key][v] {
			failures = append(failures, fmt.Sprintf("%s holds %q, never written", op.Key, v))
		}
		if present && v == op.Value && op.Result == history.Failed {
			failures = append(failures, fmt.Sprintf("%s=%q was refused with %s but is present", op.Key, op.Value, op.Note))
		}
	}
	return failures
}

func waitLive(cl *cluster.Cluster, id int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, _ := cl.Get(cl.NodeURL(id)+"/health/ready", 500*time.Millisecond); st == 200 {
			return nil
		}
		if !cl.Running(id) {
			return fmt.Errorf("node %d exited after restart", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("node %d not ready %v after restart", id, timeout)
}
