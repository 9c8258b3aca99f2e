package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/strata/chaos/history"
)

// cmdSnapshotFull fills a follower's disk while it installs a snapshot.
// Every node's data directory is on its own tmpfs (needs root to mount). A
// follower is killed, the others take more data than it will have room for
// and compact their logs past it, its disk is filled with a ballast file
// up to a few MiB, and it is restarted: the snapshot it is sent does not
// fit. The others must go on taking writes; the follower must fail cleanly
// (refuse the transfer and keep its state, report its storage failed, or
// stop) and, once the ballast is deleted,
// recover (by itself, or by a restart when it had exited), install the
// snapshot and hold exactly what the others hold. No acknowledged write may
// be lost.
func cmdSnapshotFull(args []string) int {
	var c common
	fs := c.flagSet("snapfull", 22600)
	sizeMB := fs.Int("tmpfs-mb", 128, "tmpfs size per node")
	dataMB := fs.Int("data-mb", 24, "data written while the follower is down")
	freeMB := fs.Int("free-mb", 4, "space left on the follower's disk when it restarts")
	valueKB := fs.Int("value-kb", 256, "value size")
	c.parse(fs, args)
	start := time.Now()
	report := map[string]any{"tmpfs_mb": *sizeMB, "data_mb": *dataMB, "free_mb": *freeMB, "value_kb": *valueKB}
	var findings []string
	fail := func(format string, a ...any) { findings = append(findings, fmt.Sprintf(format, a...)) }

	var dirs, mnts []string
	for i := 1; i <= 3; i++ {
		mnt := filepath.Join(c.runDir, "mnt", fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			fatalf("%v", err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", *sizeMB), "tmpfs", mnt).CombinedOutput(); err != nil {
			fatalf("mount tmpfs on %s (needs root): %v %s", mnt, err, out)
		}
		atExit(func() {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "umount %s: %v %s\n", mnt, err, out)
			}
		})
		mnts = append(mnts, mnt)
		dirs = append(dirs, filepath.Join(mnt, "data"))
	}
	cfg := c.config("cluster", 3)
	cfg.DataDirs = dirs
	cfg.NodeArgs = []string{"--compact-log-entries", "20", "--compact-keep-entries", "5"}
	cl := startCluster(cfg)
	kv := gatewayClient(cl, 8*time.Second)
	if err := cl.WaitGatewayLeader(30 * time.Second); err != nil {
		fatalf("no leader: %v", err)
	}

	var acked []history.Op
	write := func(prefix string, n int, value string) int {
		ok := 0
		for i := 0; i < n; i++ {
			op := history.Op{Kind: history.Put, Key: fmt.Sprintf("%s/%04d", prefix, i), Value: fmt.Sprintf("%04d", i) + value}
			kv.Put(&op)
			if op.Result == history.Ok {
				acked = append(acked, op)
				ok++
			}
		}
		return ok
	}
	value := strings.Repeat("s", *valueKB<<10)
	write("before", 10, "v")
	victim := 0
	for _, id := range cl.IDs() {
		if id != cl.Leader() {
			victim = id
		}
	}
	cl.Kill(victim)
	report["victim"] = victim
	report["written_while_down"] = write("snap", (*dataMB<<10) / *valueKB, value)

	// Fill the victim's disk up to freeMB.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnts[victim-1], &st); err != nil {
		fatalf("statfs: %v", err)
	}
	avail := int64(st.Bavail) * int64(st.Bsize)
	ballast := filepath.Join(mnts[victim-1], "ballast")
	if err := writeZeros(ballast, avail-int64(*freeMB)<<20); err != nil {
		fatalf("ballast: %v", err)
	}
	logPath := filepath.Join(cl.LogDir(), fmt.Sprintf("node%d.log", victim))
	if err := cl.StartNode(victim); err != nil {
		fatalf("restart: %v", err)
	}
	// It is sent a snapshot that cannot fit. Acceptable: it refuses the
	// transfer (the sender logs the receiver's ENOSPC) and keeps its own
	// state, or it reports its storage failed, or it stops (fail-stop).
	othersLog := func(needle string) int {
		n := 0
		for _, id := range cl.IDs() {
			if id != victim {
				n += countInFile(filepath.Join(cl.LogDir(), fmt.Sprintf("node%d.log", id)), needle)
			}
		}
		return n
	}
	var health string
	noticed := waitFor(30*time.Second, func() bool {
		if !cl.Running(victim) {
			health = "exited"
			return true
		}
		code, body := cl.Get(cl.NodeURL(victim)+"/health/live", time.Second)
		health = fmt.Sprintf("%d %s", code, truncate(string(body), 160))
		return code == 503 || othersLog("No space left on device") > 0
	})
	// Let it be refused for a while, as a full disk would be in practice.
	time.Sleep(5 * time.Second)
	refusals := othersLog("No space left on device")
	readyCode, readyBody := cl.Get(cl.NodeURL(victim)+"/health/ready", time.Second)
	ready := fmt.Sprintf("%d %s", readyCode, truncate(string(readyBody), 200))
	report["victim_when_full"] = health
	report["victim_ready_when_full"] = ready
	report["transfers_refused_for_space"] = refusals
	// The sender waits longer after each refusal (0.25 s doubling to 4 s):
	// sending again at every heartbeat answer was dozens in these seconds.
	if refusals > 12 {
		fail("the leader sent node %d its snapshot %d times while it had no space (want a growing wait between tries)", victim, refusals)
	}
	if cl.Running(victim) && (readyCode != 503 || !strings.Contains(string(readyBody), "space")) {
		fail("node %d, unable to stage the leader's snapshot for want of space, answered /health/ready %s (want 503 saying so)", victim, ready)
	}
	report["victim_log_when_full"] = grepLines(logPath, []string{"snapshot", "space", "storage"}, 12)
	fmt.Printf("snapfull: node %d restarted with %d MiB free for a %d MiB snapshot: health %s; ready %s; %d transfers refused for space\n",
		victim, *freeMB, *dataMB, health, ready, refusals)
	if !noticed {
		if countInFile(logPath, "snapshot installed") > 0 {
			fail("node %d installed a %d MiB snapshot with %d MiB free (the test did not fill the disk enough)", victim, *dataMB, *freeMB)
		} else {
			fail("node %d neither refused a snapshot for space nor failed within 30 s with its disk full", victim)
		}
	}
	// The others go on.
	if n := write("during", 20, "v"); n != 20 {
		fail("only %d of 20 writes succeeded while node %d's disk was full", n, victim)
	}

	// Free the space: the node restarts itself (or is restarted when it had
	// exited) and must install the snapshot.
	_ = os.Remove(ballast)
	freed := time.Now()
	if !cl.Running(victim) {
		report["restarted_by_harness"] = true
		if err := cl.HealAll(); err != nil {
			fail("restart after freeing space: %v", err)
		}
	}
	state, err := cl.WaitConverged(90 * time.Second)
	report["converged_after_free_s"] = time.Since(freed).Seconds()
	if err != nil {
		fail("node %d did not catch up within 90 s of freeing space: %v", victim, err)
	}
	report["victim_installed"] = countInFile(logPath, "snapshot installed")
	lost := 0
	for _, a := range acked {
		if state != nil && state[a.Key] != a.Value {
			lost++
		}
	}
	readable := readBack(kv, acked)
	report["acknowledged"], report["readable"], report["missing_from_converged_state"] = len(acked), readable, lost
	if readable != len(acked) || lost > 0 {
		fail("%d of %d acknowledged writes readable, %d missing from the converged state", readable, len(acked), lost)
	}
	if dead := cl.Exited(); len(dead) > 0 {
		fail("nodes %v exited at the end", dead)
	}
	report["findings"] = findings
	report["duration_s"] = time.Since(start).Seconds()
	path := writeResult(c.runDir, report)
	fmt.Printf("snapfull: %d acknowledged, %d readable; node %d converged %.1f s after the space was freed (installed %v snapshot(s)); %d findings (%.0f s); %s\n",
		len(acked), readable, victim, report["converged_after_free_s"], report["victim_installed"], len(findings),
		time.Since(start).Seconds(), path)
	return exitCode(findings)
}

// grepLines is up to max lines of path that contain one of needles.
func grepLines(path string, needles []string, max int) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, n := range needles {
			if strings.Contains(l, n) {
				out = append(out, truncate(l, 300))
				break
			}
		}
		if len(out) >= max {
			break
		}
	}
	return out
}
