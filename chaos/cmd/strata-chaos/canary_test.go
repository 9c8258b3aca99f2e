package main

import (
	"strings"
	"testing"

	"github.com/strata/chaos/cluster"
)

func report(ok, violation, inconclusive uint64) cluster.CanaryReport {
	return cluster.CanaryReport{Enabled: true, WindowsOk: ok, WindowsViolation: violation, WindowsInconclusive: inconclusive}
}

// A node's report starts from zero at each start: the tally keeps the last
// report of every life and sums them, and within one life a late, smaller
// report (read as the node restarted) does not lower what was seen.
func TestCanaryTallySumsEveryLifeOfEveryNode(t *testing.T) {
	tally := newCanaryTally()
	tally.observe(1, 100, report(2, 0, 0))
	tally.observe(1, 100, report(5, 0, 1))
	tally.observe(1, 100, report(1, 0, 0)) // the next life's first report, read under the old pid
	tally.observe(1, 200, report(3, 0, 0)) // node 1 restarted
	tally.observe(2, 300, report(4, 0, 0))
	got := tally.counts()
	want := canaryCounts{WindowsOk: 12, WindowsInconclusive: 1, Nodes: 2, Lives: 3}
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if p := tally.problems(nil); len(p) != 0 {
		t.Errorf("clean canaries flagged: %v", p)
	}
	if s := got.String(); !strings.Contains(s, "12 ok, 0 violation, 1 inconclusive (2 nodes, 3 lives)") {
		t.Errorf("printed as %q", s)
	}
}

// A violation fails the run whether the report shows it or only the node's
// log does (the window was checked just before a kill, between two polls),
// and counts once when both do; a node whose canary is off fails it too.
func TestCanaryViolationsAndDisabledCanariesAreProblems(t *testing.T) {
	tally := newCanaryTally()
	bad := report(3, 1, 0)
	bad.LastViolation = &struct {
		Window string `json:"window"`
		Key    string `json:"key"`
	}{Window: "1700000000000-4", Key: "__strata_canary/2/1700000000000-4/1"}
	tally.observe(2, 20, bad)
	tally.observe(1, 10, report(3, 0, 0))
	tally.observe(3, 30, cluster.CanaryReport{})
	problems := tally.problems(map[int]int{2: 1, 1: 2})
	if len(problems) != 3 {
		t.Fatalf("problems: %q", problems)
	}
	for i, want := range []string{
		"node 1's canary found 2 window(s) not linearizable",
		"node 2's canary found 1 window(s) not linearizable; last: window 1700000000000-4, key __strata_canary/2/1700000000000-4/1",
		"node 3 does not run its canary",
	} {
		if !strings.HasPrefix(problems[i], want) {
			t.Errorf("problem %d is %q, want it to start with %q", i, problems[i], want)
		}
	}
}
