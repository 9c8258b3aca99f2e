package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// writeJSON writes v, indented, to path. A failed write is not an error of
// the run: the verdict is what the command prints and its exit code, the
// file only keeps the details for later.
func writeJSON(path string, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	_ = os.WriteFile(path, b, 0o644)
}

// writeResult writes a command's report as result.json in dir and returns
// that file's path, for the summary line.
func writeResult(dir string, report any) string {
	path := filepath.Join(dir, "result.json")
	writeJSON(path, report)
	return path
}

// exitCode prints every failure as a FAIL line and is the command's exit
// code: 1 when anything failed, 0 otherwise.
func exitCode(failures []string) int {
	for _, f := range failures {
		fmt.Println("  FAIL", f)
	}
	if len(failures) > 0 {
		return 1
	}
	return 0
}
