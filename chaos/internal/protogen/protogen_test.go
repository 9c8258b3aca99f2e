package protogen

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The checked-in kvpb/kv.pb.go is what the generator makes from today's
// proto/strata/v1/kv.proto, so the harness cannot drift from the API.
func TestGenerate_matchesCheckedInCode(t *testing.T) {
	files, err := Generate(filepath.Join("..", "..", "..", "proto"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("generated %d files, want 1: %v", len(files), files)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with proto/%s: run `go generate ./kvpb` in chaos/", name, Source)
		}
	}
}
