// Command gen writes kvpb/kv.pb.go from proto/strata/v1/kv.proto; run it
// from the chaos module root (`go generate ./kvpb` does).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata/chaos/internal/protogen"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, err := protogen.Generate(filepath.Join(root, "..", "proto"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		fmt.Println("wrote", path)
	}
}
