package main

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata/chaos/cluster"
	"github.com/strata/chaos/history"
)

// cmdDiskFault makes fsync fail (EIO) under a running node, with strace's
// syscall fault injection attached to the live process, first on a
// follower, then on the leader, while a writer keeps going through the
// gateway. Each time: the node must report itself unhealthy and stop
// applying, the others must keep taking writes (electing a new leader when
// the leader failed), and after the injection stops and the node is
// restarted it must catch up. Every acknowledged write must read back.
func cmdDiskFault(args []string) int {
	var c common
	fs := c.flagSet("diskfault", 22500)
	c.parse(fs, args)
	strace, err := exec.LookPath("strace")
	if err != nil {
		fatalf("strace is needed to inject fsync failures: %v", err)
	}
	start := time.Now()
	cl := startCluster(c.config("cluster", 3))
	kv := gatewayClient(cl, 5*time.Second)

	var mu sync.Mutex
	acked := map[string]string{}
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			op := history.Op{Kind: history.Put, Key: fmt.Sprintf("df/%06d", i), Value: fmt.Sprint(i)}
			kv.Put(&op)
			if op.Result == history.Ok {
				mu.Lock()
				acked[op.Key] = op.Value
				mu.Unlock()
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}

	var findings []string
	report := map[string]any{}
	for _, role := range []string{"follower", "leader"} {
		time.Sleep(time.Second)
		leader := cl.Leader()
		victim := leader
		if role == "follower" {
			for _, id := range cl.IDs() {
				if id != leader {
					victim = id
					break
				}
			}
		}
		r, f := injectFsyncFailure(cl, strace, victim, role, ackedCount)
		report[role] = r
		findings = append(findings, f...)
	}
	close(stop)
	<-writerDone

	if _, err := cl.WaitConverged(30 * time.Second); err != nil {
		findings = append(findings, "nodes did not converge: "+err.Error())
	}
	lost := 0
	mu.Lock()
	for k, v := range acked {
		g := history.Op{Kind: history.Get, Key: k}
		kv.Get(&g)
		if g.Result != history.Ok || !g.Found || g.Got != v {
			lost++
			if lost <= 5 {
				findings = append(findings, fmt.Sprintf("acknowledged %s=%s reads back as %v %q (%s)", k, v, g.Found, g.Got, g.Note))
			}
		}
	}
	report["acknowledged"] = len(acked)
	mu.Unlock()
	report["lost"] = lost
	if dead := cl.Exited(); len(dead) > 0 {
		findings = append(findings, fmt.Sprintf("nodes %v exited", dead))
	}
	report["findings"] = findings
	report["duration_s"] = time.Since(start).Seconds()
	path := writeResult(c.runDir, report)
	fmt.Printf("diskfault: %d acknowledged writes, %d lost, %d findings (%.0f s); %s\n", report["acknowledged"], lost,
		len(findings), time.Since(start).Seconds(), path)
	return exitCode(findings)
}

// injectFsyncFailure attaches strace to node victim so that every fsync and
// fdatasync fails with EIO, checks the node poisons itself while the others
// go on, detaches, restarts the node and checks it catches up.
func injectFsyncFailure(cl *cluster.Cluster, strace string, victim int, role string,
	acked func() int) (map[string]any, []string) {
	r := map[string]any{"node": victim}
	var findings []string
	fail := func(format string, a ...any) {
		findings = append(findings, fmt.Sprintf("%s %d: ", role, victim)+fmt.Sprintf(format, a...))
	}
	pid := cl.Pid(victim)
	cmd := exec.Command(strace, "-f", "-qq", "-p", fmt.Sprint(pid), "-o", "/dev/null",
		"-e", "trace=fsync,fdatasync", "-e", "inject=fsync,fdatasync:error=EIO")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fail("strace: %v", err)
		return r, findings
	}
	detach := func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	atExit(detach)
	defer detach()
	injected := time.Now()

	// The node notices at its next fsync (the writer makes one soon).
	var health string
	poisoned := waitFor(15*time.Second, func() bool {
		st, body := cl.Get(cl.NodeURL(victim)+"/health/ready", time.Second)
		health = fmt.Sprintf("%d %s", st, truncate(string(body), 160))
		return st == 503 && strings.Contains(string(body), "storage")
	})
	r["unhealthy_after_s"] = time.Since(injected).Seconds()
	r["health"] = health
	if !poisoned {
		fail("still healthy 15 s after fsync started failing: %s", health)
		return r, findings
	}

	// The others carry on: a leader among them, and writes acknowledged.
	before, applied := acked(), appliedIndex(cl, victim)
	progressed := waitFor(15*time.Second, func() bool {
		l := cl.Leader()
		return l != 0 && l != victim && acked() >= before+50
	})
	r["new_leader"] = cl.Leader()
	r["writes_while_failed"] = acked() - before
	if !progressed {
		fail("the cluster did not go on without it: leader %d, %d writes in 15 s", cl.Leader(), acked()-before)
	}
	if now := appliedIndex(cl, victim); now != applied {
		fail("kept applying after its fsync failed: applied index %d -> %d", applied, now)
	}

	// Stop injecting: the node stays failed (only a restart clears it),
	// then a restart recovers it.
	detach()
	if st, _ := cl.Get(cl.NodeURL(victim)+"/health/ready", time.Second); st == 200 {
		fail("became healthy again without a restart")
	}
	cl.Kill(victim)
	if err := cl.StartNode(victim); err != nil {
		fail("restart: %v", err)
		return r, findings
	}
	restarted := time.Now()
	if !waitFor(30*time.Second, func() bool {
		st, _ := cl.Get(cl.NodeURL(victim)+"/health/ready", time.Second)
		return st == 200
	}) {
		fail("not healthy 30 s after the restart")
	}
	r["healthy_after_restart_s"] = time.Since(restarted).Seconds()
	fmt.Printf("  %s %d: unhealthy %.2f s after fsync began failing (%s); %d writes went on without it (leader %v); healthy %.1f s after restart\n",
		role, victim, r["unhealthy_after_s"], truncate(health, 80), r["writes_while_failed"], r["new_leader"],
		r["healthy_after_restart_s"])
	return r, findings
}

// appliedIndex is node id's own applied index, or 0 when it does not answer.
func appliedIndex(cl *cluster.Cluster, id int) uint64 {
	s, _ := localStatus(cl, id)
	return s.Applied
}
