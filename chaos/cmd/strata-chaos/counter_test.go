package main

import (
	"strings"
	"testing"

	"github.com/strata/chaos/history"
)

// A counter above acknowledged + ambiguous increments is reported as a
// duplicate, one below the acknowledged ones as lost, and one in between
// passes.
func TestCountersCheck_reportsDuplicatesAndLosses(t *testing.T) {
	cs := newCounters()
	cs.note("ctr/0", 3, 1) // final 4: the ambiguous one applied
	cs.note("ctr/1", 3, 1) // final 3: it did not
	cs.note("ctr/2", 3, 1) // final 6: two increments too many
	cs.note("ctr/3", 3, 0) // final 2: one acknowledged increment lost
	cs.note("ctr/4", 1, 0) // never read back
	final := map[string]history.Op{
		"ctr/0": {Found: true, Got: "4"},
		"ctr/1": {Found: true, Got: "3"},
		"ctr/2": {Found: true, Got: "6"},
		"ctr/3": {Found: true, Got: "2"},
	}
	v, dups := cs.check(final)
	if dups != 2 {
		t.Errorf("duplicates = %d, want 2", dups)
	}
	joined := strings.Join(v, "\n")
	for _, want := range []string{"ctr/2: DUPLICATE: counter is 6", "ctr/3: counter is 2 but 3 increments were acknowledged (1 lost)",
		"ctr/4: no final read succeeded"} {
		if !strings.Contains(joined, want) {
			t.Errorf("violations lack %q:\n%s", want, joined)
		}
	}
	if len(v) != 3 {
		t.Errorf("%d violations, want 3:\n%s", len(v), joined)
	}
}

// An absent counter is zero: fine when nothing was acknowledged.
func TestCountersCheck_absentCounterIsZero(t *testing.T) {
	cs := newCounters()
	cs.note("ctr/0", 0, 2)
	if v, d := cs.check(map[string]history.Op{"ctr/0": {Found: false}}); len(v) != 0 || d != 0 {
		t.Errorf("violations %v, duplicates %d", v, d)
	}
}
