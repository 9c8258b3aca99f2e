package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A command's exit code is 1 exactly when it found something, and its
// report lands as result.json in the directory it names.
func TestReportWritesResultAndExitCodeFollowsFailures(t *testing.T) {
	if got := exitCode(nil); got != 0 {
		t.Errorf("no failures: exit code %d, want 0", got)
	}
	if got := exitCode([]string{"node 2 exited"}); got != 1 {
		t.Errorf("one failure: exit code %d, want 1", got)
	}
	dir := t.TempDir()
	path := writeResult(dir, map[string]any{"lost": 0})
	if path != filepath.Join(dir, "result.json") {
		t.Fatalf("result written to %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := json.Unmarshal(b, &got); err != nil || got["lost"] != 0 || len(got) != 1 {
		t.Errorf("result.json holds %s (%v)", b, err)
	}
}
