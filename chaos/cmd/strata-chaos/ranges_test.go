package main

import (
	"reflect"
	"testing"
)

func TestSplitKeysAndTheFaultLeftOut(t *testing.T) {
	// Proves: -split-at is read as its keys in order (blanks and empty
	// items dropped); leaving a fault kind out keeps the others in order.
	if got := splitKeys(" ctr/, list/,,reg/ "); !reflect.DeepEqual(got, []string{"ctr/", "list/", "reg/"}) {
		t.Fatalf("splitKeys: %q", got)
	}
	if got := splitKeys(""); len(got) != 0 {
		t.Fatalf("no keys: %q", got)
	}
	got := withoutFault("kill-leader,membership-change,delay", "membership-change")
	if got != "kill-leader,delay" {
		t.Fatalf("withoutFault: %q", got)
	}
}
