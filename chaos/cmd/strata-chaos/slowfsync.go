package main

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
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
	victim := n.follower()
	if n.rng.Intn(2) == 0 {
		victim = n.leader()
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
	return detach, fmt.Sprintf("every fsync/fdatasync of node %d delayed by %d ms", victim, fsyncDelayMicros/1000)
}
