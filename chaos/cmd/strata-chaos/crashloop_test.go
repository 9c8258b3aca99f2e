package main

import (
	"strings"
	"testing"

	"github.com/strata/chaos/history"
)

func put(key, value string, result history.Outcome) history.Op {
	return history.Op{Kind: history.Put, Key: key, Value: value, Result: result}
}

// A write refused with 503 and retried under a new value on the same key is
// no finding when the retry's value is what the key holds.
func TestRetriedRefusedWriteHoldingTheRetrysValueIsNoFinding(t *testing.T) {
	ops := []history.Op{
		put("crash/0/150", "v0.150", history.Failed),
		put("crash/0/150", "v0.150r1", history.Ok),
	}
	if f := checkUnacknowledged(ops, map[string]string{"crash/0/150": "v0.150r1"}); len(f) != 0 {
		t.Fatalf("false alarm: %v", f)
	}
}

// A refused write whose own value is present was applied: a lie.
func TestRefusedWriteThatWasAppliedIsAFinding(t *testing.T) {
	ops := []history.Op{put("k", "v", history.Failed)}
	f := checkUnacknowledged(ops, map[string]string{"k": "v"})
	if len(f) != 1 || !strings.Contains(f[0], "refused") {
		t.Fatalf("want one refused-but-present finding, got %v", f)
	}
}

// A value nobody wrote is a finding; an unknown outcome may be present or not.
func TestValueNeverWrittenIsAFindingAndUnknownMayLand(t *testing.T) {
	ops := []history.Op{put("a", "va", history.Unknown), put("b", "vb", history.Unknown)}
	f := checkUnacknowledged(ops, map[string]string{"a": "va", "b": "other"})
	if len(f) != 1 || !strings.Contains(f[0], "never written") {
		t.Fatalf("want one never-written finding, got %v", f)
	}
}
