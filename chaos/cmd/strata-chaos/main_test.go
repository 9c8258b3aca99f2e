package main

import (
	"strings"
	"testing"

	"github.com/strata/chaos/history"
)

// The error contract decides what the checker may assume: only the node's
// own 503 UNAVAILABLE and 4xx mean "not applied"; 504, 500, 507 and
// anything Envoy says without the contract's body are ambiguous.
func TestClassifyFollowsTheErrorContract(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   history.Outcome
	}{
		{503, `{"code":"UNAVAILABLE","message":"no leader"}`, history.Failed},
		{400, `{"code":"INVALID_ARGUMENT","message":"empty key"}`, history.Failed},
		{504, `{"code":"OUTCOME_UNKNOWN","message":"timeout"}`, history.Unknown},
		{503, `upstream connect error or disconnect/reset before headers`, history.Unknown},
		{507, `{"code":"STORAGE_FULL","message":"full"}`, history.Unknown},
		{500, `{"code":"STORAGE_FAILED","message":"poisoned"}`, history.Unknown},
	}
	for _, c := range cases {
		if got, _ := classify(c.status, []byte(c.body)); got != c.want {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, got, c.want)
		}
	}
}

// The list-append check finds a lost acknowledged append, a duplicate, an
// element nobody appended, and a converged state that disagrees with the
// final read; ambiguous appends may be present or absent.
func TestAckedAppendsCheck(t *testing.T) {
	a := &ackedAppends{elems: map[string]map[string]bool{}}
	a.add("l", "1")
	a.add("l", "2")
	a.ambiguous("l", "3")
	final := map[string]history.Op{"l": {Found: true, Got: "1 2"}}
	if v, d := a.check(final, map[string]string{"l": "1 2"}); len(v) != 0 || d != 0 {
		t.Fatalf("clean history flagged: %v, %d duplicates", v, d)
	}
	bad := map[string]history.Op{"l": {Found: true, Got: "1 1 9"}}
	violations, dups := a.check(bad, map[string]string{"l": "1 2"})
	if dups != 1 {
		t.Errorf("%d duplicates, want 1", dups)
	}
	v := strings.Join(violations, "\n")
	for _, want := range []string{`"2" lost`, `"1" appears 2 times`, `"9" was never appended`, "differs from the converged state"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in:\n%s", want, v)
		}
	}
}
