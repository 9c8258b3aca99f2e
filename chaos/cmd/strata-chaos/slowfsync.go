package main

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/strata/chaos/history"
)

// fsyncDelayMicros is how long each fsync and fdatasync of the slowed node
// takes on top of its own time: 300 ms, a disk in trouble rather than a
// dead one.
const fsyncDelayMicros = 300_000

// slowFsync attaches strace to one node (the leader half the time) so that
// every fsync and fdatasync returns 300 ms late, for 2 s plus the hold;
// heal detaches it. Without strace, or when ptrace is not allowed, it is
// skipped and says why.
func (n *nemesis) slowFsync() (func(), string) {
	noop := func() {}
	strace, err := exec.LookPath("strace")
	if err != nil {
		return noop, "skipped: strace is not installed (./dev setup-system installs it)"
	}
	victim, role := n.follower(), "a follower"
	if n.rng.Intn(2) == 0 {
		victim, role = n.leader(), "the leader"
	}
	pid := n.cl.Pid(victim)
	if pid == 0 {
		return noop, fmt.Sprintf("skipped: node %d is not running", victim)
	}
	inject := fmt.Sprintf("inject=fsync,fdatasync:delay_exit=%d", fsyncDelayMicros)
	cmd := exec.Command(strace, "-f", "-qq", "-p", fmt.Sprint(pid), "-o", "/dev/null",
		"-e", "trace=fsync,fdatasync", "-e", inject)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return noop, "skipped: strace did not start: " + err.Error()
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// strace that cannot attach (no ptrace permission) exits at once.
	select {
	case err := <-exited:
		return noop, fmt.Sprintf("skipped: strace could not attach to node %d (is ptrace allowed?): %v", victim, err)
	case <-time.After(300 * time.Millisecond):
	}
	detach := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	atExit(func() { _ = cmd.Process.Kill() })
	time.Sleep(2 * time.Second)
	// One write shows the delay took: through a slowed leader it cannot
	// be acknowledged in less than the delay.
	probe := history.Op{Kind: history.Put, Key: "probe/slow-fsync", Value: "x"}
	began := time.Now()
	gatewayClient(n.cl, 6*time.Second).Put(&probe)
	return detach, fmt.Sprintf("every fsync/fdatasync of node %d (%s) delayed by %d ms; 2 s later node %d led and a write took %v (%s)",
		victim, role, fsyncDelayMicros/1000, n.cl.Leader(), time.Since(began).Round(time.Millisecond), probe.Result)
}
