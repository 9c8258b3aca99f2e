package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/strata/chaos/history"
)

// cmdDiskFull puts every node's data directory on its own small tmpfs,
// half filled by a ballast file, writes until the disks are full, records
// exactly what the cluster answers, checks that acknowledged data is
// intact, then frees the space (deletes the ballast) and checks that the
// nodes recover by themselves, without a restart. It must run as root (mount).
func cmdDiskFull(args []string) int {
	var c common
	fs := c.flagSet("diskfull", 22200)
	sizeMB := fs.Int("tmpfs-mb", 48, "tmpfs size per node")
	freeMB := fs.Int("free-mb", 12, "space left free by the ballast")
	valueKB := fs.Int("value-kb", 128, "value size")
	maxWrites := fs.Int("max-writes", 1500, "bound on writes")
	c.parse(fs, args)
	start := time.Now()
	report := map[string]any{"seed": c.seed, "tmpfs_mb": *sizeMB, "free_mb": *freeMB, "value_kb": *valueKB}
	var findings []string

	var dirs []string
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
		ballast := filepath.Join(mnt, "ballast")
		if err := writeZeros(ballast, int64(*sizeMB-*freeMB)<<20); err != nil {
			fatalf("ballast: %v", err)
		}
		dirs = append(dirs, filepath.Join(mnt, "data"))
	}
	cfg := c.config("cluster", 3)
	cfg.DataDirs = dirs
	cl := startCluster(cfg)
	kv := gatewayClient(cl, 8*time.Second)

	// Fill: unique keys, large values, until 20 answers in a row are not 200.
	value := strings.Repeat("x", *valueKB<<10)
	statuses := map[string]int{}
	var acked, refused []history.Op
	bad := 0
	deadline := time.Now().Add(3 * time.Minute)
	for i := 0; i < *maxWrites && bad < 20 && time.Now().Before(deadline); i++ {
		op := history.Op{Kind: history.Put, Key: fmt.Sprintf("fill/%05d", i), Value: fmt.Sprintf("%05d", i) + value}
		kv.Put(&op)
		label := "200"
		if op.Result != history.Ok {
			label = op.Note
			if j := strings.Index(label, ":"); j > 0 && len(label) > 60 {
				label = label[:60]
			}
			bad++
			refused = append(refused, op)
			time.Sleep(100 * time.Millisecond)
		} else {
			bad = 0
			acked = append(acked, op)
		}
		statuses[label]++
	}
	report["fill_answers"] = statuses
	report["acknowledged"] = len(acked)
	fmt.Printf("diskfull: %d acknowledged writes of %d KiB; answers %v\n", len(acked), *valueKB, statuses)

	// What the nodes say about themselves while full.
	health := map[string]string{}
	for _, id := range cl.IDs() {
		for _, ep := range []string{"/health/live", "/health/ready", "/health/leader"} {
			st, body := cl.Get(cl.NodeURL(id)+ep, time.Second)
			health[fmt.Sprintf("node%d%s", id, ep)] = fmt.Sprintf("%d %s", st, truncate(string(body), 150))
		}
	}
	report["health_when_full"] = health
	report["exited_when_full"] = cl.Exited()
	for k, v := range health {
		fmt.Printf("  %s: %s\n", k, v)
	}
	if dead := cl.Exited(); len(dead) > 0 {
		findings = append(findings, fmt.Sprintf("nodes %v exited when the disk filled (see logs)", dead))
	}
	readable := readBack(kv, acked)
	report["acknowledged_readable_when_full"] = readable
	fmt.Printf("  acknowledged and readable while full: %d of %d\n", readable, len(acked))

	// Free the space. Each node notices, restarts itself (same process id:
	// it re-executes) and recovers from its raft log; nobody restarts it.
	for i := 1; i <= 3; i++ {
		_ = os.Remove(filepath.Join(c.runDir, "mnt", fmt.Sprintf("node%d", i), "ballast"))
	}
	freed := time.Now()
	recovered := waitFor(90*time.Second, func() bool {
		for _, id := range cl.IDs() {
			if st, _ := cl.Get(cl.NodeURL(id)+"/health/ready", time.Second); st != 200 {
				return false
			}
		}
		op := history.Op{Kind: history.Put, Key: "after-free/probe", Value: "1"}
		kv.Put(&op)
		return op.Result == history.Ok
	})
	report["recovered_without_restart_s"] = time.Since(freed).Seconds()
	if !recovered {
		findings = append(findings, "the cluster did not recover within 90 s of freeing space (no restart by the harness)")
	}
	fmt.Printf("  after freeing space: recovered %v in %.1f s, without a restart by the harness\n", recovered,
		time.Since(freed).Seconds())
	if dead := cl.Exited(); len(dead) > 0 {
		findings = append(findings, fmt.Sprintf("nodes %v exited instead of recovering", dead))
	}
	readable = readBack(kv, acked)
	report["acknowledged_readable_after_recovery"] = readable
	if readable != len(acked) {
		findings = append(findings, fmt.Sprintf("only %d of %d acknowledged writes readable after recovery", readable, len(acked)))
	}
	// What became of the writes that were refused or ambiguous while full.
	fate := map[string]int{}
	for _, r := range refused {
		g := history.Op{Kind: history.Get, Key: r.Key}
		kv.Get(&g)
		state := "absent"
		if g.Found {
			state = "present"
		}
		if g.Result != history.Ok {
			state = "unreadable " + g.Note
		}
		fate[state+" after recovery, answered "+truncate(r.Note, 40)]++
		if g.Found && strings.HasPrefix(r.Note, "503") {
			findings = append(findings, fmt.Sprintf("%s was refused with 503 but is present after recovery", r.Key))
		}
	}
	report["refused_writes_after_recovery"] = fate
	fmt.Printf("  writes not acknowledged while full, after recovery: %v\n", fate)
	newOK := 0
	for i := 0; i < 20; i++ {
		op := history.Op{Kind: history.Put, Key: fmt.Sprintf("after/%d", i), Value: "v"}
		kv.Put(&op)
		if op.Result == history.Ok {
			newOK++
		}
	}
	report["new_writes_after_recovery"] = newOK
	if newOK != 20 {
		findings = append(findings, fmt.Sprintf("%d of 20 new writes succeeded after recovery", newOK))
	}
	if _, err := cl.WaitConverged(30 * time.Second); err != nil {
		findings = append(findings, "nodes did not converge after recovery: "+err.Error())
	}
	if dead := cl.Exited(); len(dead) > 0 {
		findings = append(findings, fmt.Sprintf("nodes %v exited after recovery", dead))
	}
	sort.Strings(findings)
	report["findings"] = findings
	report["duration_s"] = time.Since(start).Seconds()
	path := writeResult(c.runDir, report)
	fmt.Printf("diskfull: after freeing space: %d of %d acknowledged readable, %d/20 new writes; %d findings (%.0f s); %s\n",
		readable, len(acked), newOK, len(findings), time.Since(start).Seconds(), path)
	return exitCode(findings)
}

// readBack counts acknowledged writes that read back with their value.
func readBack(kv *kvClient, acked []history.Op) int {
	n := 0
	for _, a := range acked {
		g := history.Op{Kind: history.Get, Key: a.Key}
		kv.Get(&g)
		if g.Result == history.Ok && g.Found && g.Got == a.Value {
			n++
		}
	}
	return n
}

func writeZeros(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n > 0 {
		m := int64(len(buf))
		if n < m {
			m = n
		}
		if _, err := f.Write(buf[:m]); err != nil {
			return err
		}
		n -= m
	}
	return nil
}
