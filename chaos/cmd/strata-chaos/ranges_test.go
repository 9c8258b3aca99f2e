package main

import (
	"reflect"
	"testing"
)

func TestSplitKeys(t *testing.T) {
	// Proves: -split-at is read as its keys in order (blanks and empty
	// items dropped).
	if got := splitKeys(" ctr/, list/,,reg/ "); !reflect.DeepEqual(got, []string{"ctr/", "list/", "reg/"}) {
		t.Fatalf("splitKeys: %q", got)
	}
	if got := splitKeys(""); len(got) != 0 {
		t.Fatalf("no keys: %q", got)
	}
}
