package main

import (
	"fmt"
	"path/filepath"
	"time"
)

// snapshotRace kills a follower, writes past two compactions so that it
// needs a snapshot, restarts it and, while it is being sent one, writes
// past two more compactions, so that the leader builds a new snapshot
// while the old one is still in flight. The follower must end up
// installing one and catching up; the checks after the run cover the rest.
func (n *nemesis) snapshotRace() (func(), string) {
	noop := func() {}
	victim := n.follower()
	n.cl.Kill(victim)
	written := n.writeFiller(2*compactLogEntries+compactKeepEntries, fmt.Sprintf("race/%d/", n.rng.Int63()))
	logPath := filepath.Join(n.cl.LogDir(), fmt.Sprintf("node%d.log", victim))
	installedBefore := countInFile(logPath, "snapshot installed")
	builtBefore := n.countInLogs("snapshot ready")
	if err := n.cl.StartNode(victim); err != nil {
		return noop, fmt.Sprintf("restart of node %d failed: %v", victim, err)
	}
	// StartNode returns once the process runs: these writes overlap the
	// restarted node's catch-up.
	more := n.writeFiller(2*compactLogEntries+compactKeepEntries, fmt.Sprintf("race/%d/", n.rng.Int63()))
	installed := waitFor(20*time.Second, func() bool { return countInFile(logPath, "snapshot installed") > installedBefore })
	n.snapshots += boolInt(installed)
	how := fmt.Sprintf("installed %d snapshot(s)", countInFile(logPath, "snapshot installed")-installedBefore)
	if !installed {
		how = "did NOT install a snapshot within 20 s"
	}
	return noop, fmt.Sprintf("killed follower %d, wrote %d entries past it, restarted it and wrote %d more while it caught up: %d snapshot(s) built, %s",
		victim, written, more, n.countInLogs("snapshot ready")-builtBefore, how)
}

// countInLogs counts needle in every node's log.
func (n *nemesis) countInLogs(needle string) int {
	total := 0
	for id := 1; id <= 6; id++ {
		total += countInFile(filepath.Join(n.cl.LogDir(), fmt.Sprintf("node%d.log", id)), needle)
	}
	return total
}
