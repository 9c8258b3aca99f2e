package main

import (
	"fmt"
	"path/filepath"
	"time"
)

// snapshotRace makes the leader build a new snapshot for a follower while
// an older one is still on its way there. It kills a follower, writes past
// two compactions so that it needs a snapshot, slows the leader's link to
// it (every chunk held 150 ms) and restarts it. Once the leader has built
// that snapshot and is streaming it, it writes past two more compactions
// and breaks the slow link for 300 ms mid-transfer: the leader learns the
// send failed and must send again, from a log that has moved on, so a new
// snapshot is built while the node may still be staging the old one. The
// follower must end up installing one and catching up; the checks after
// the run cover the rest.
func (n *nemesis) snapshotRace() (func(), string) {
	noop := func() {}
	leader, victim := n.cl.Leader(), n.follower()
	n.cl.Kill(victim)
	written := n.writeFiller(2*compactLogEntries+compactKeepEntries, fmt.Sprintf("race/%d/", n.rng.Int63()))
	logPath := filepath.Join(n.cl.LogDir(), fmt.Sprintf("node%d.log", victim))
	installedBefore := countInFile(logPath, "snapshot installed")
	builtBefore := n.countInLogs("snapshot ready")
	link := n.cl.Link(leader, victim)
	if leader == 0 || !n.cl.Proxied(victim) {
		link = nil
	}
	if link != nil {
		link.Delay(150 * time.Millisecond)
	}
	defer n.cl.HealLinks()
	if err := n.cl.StartNode(victim); err != nil {
		return noop, fmt.Sprintf("restart of node %d failed: %v", victim, err)
	}
	building := waitFor(10*time.Second, func() bool { return n.countInLogs("snapshot ready") > builtBefore })
	broke := "link not proxied, not broken"
	more := make(chan int)
	go func() {
		more <- n.writeFiller(2*compactLogEntries+compactKeepEntries, fmt.Sprintf("race/%d/", n.rng.Int63()))
	}()
	if link != nil && building {
		time.Sleep(300 * time.Millisecond)
		link.Cut()
		time.Sleep(300 * time.Millisecond)
		link.Heal()
		link.Delay(150 * time.Millisecond)
		broke = fmt.Sprintf("link %d->%d broken mid-transfer", leader, victim)
	}
	wrote := <-more
	n.cl.HealLinks()
	installed := waitFor(20*time.Second, func() bool { return countInFile(logPath, "snapshot installed") > installedBefore })
	n.snapshots += boolInt(installed)
	// A follower that failed to install reports its storage failed (and
	// stays so until restarted): say so here, where it happened.
	if code, body := n.cl.Get(n.cl.NodeURL(victim)+"/health/live", time.Second); code == 503 {
		n.problem("snapshot-race: node %d is unhealthy after catching up by snapshot: %s", victim, truncate(string(body), 300))
	}
	built := n.countInLogs("snapshot ready") - builtBefore
	how := fmt.Sprintf("installed %d snapshot(s)", countInFile(logPath, "snapshot installed")-installedBefore)
	if !installed {
		how = "did NOT install a snapshot within 20 s"
	}
	return noop, fmt.Sprintf("killed follower %d, wrote %d entries past it, restarted it behind a slow link; %s while %d more were written: %d snapshot(s) built, %s",
		victim, written, broke, wrote, built, how)
}

// countInLogs counts needle in every node's log.
func (n *nemesis) countInLogs(needle string) int {
	total := 0
	for id := 1; id <= 6; id++ {
		total += countInFile(filepath.Join(n.cl.LogDir(), fmt.Sprintf("node%d.log", id)), needle)
	}
	return total
}
