// Package protogen turns proto/strata/v1/kv.proto into the Go code in
// kvpb, with protocompile as the parser and protoc-gen-go's own generator,
// so that no protoc binary is needed. The generated file is checked in;
// `go generate ./kvpb` rewrites it and a test keeps the two equal.
package protogen

import (
	"context"
	"fmt"

	"github.com/bufbuild/protocompile"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/pluginpb"
)

// Source is the proto file the chaos harness speaks, relative to proto/.
const Source = "strata/v1/kv.proto"

// GoPackage is where its Go code lives. The .proto files carry no
// go_package option (their other users are Rust), so it is passed the way
// protoc users pass it, as an M parameter.
const GoPackage = "github.com/strata/chaos/kvpb"

// Generate compiles Source from protoDir and returns the generated files by
// name relative to the module root (kvpb/kv.pb.go).
func Generate(protoDir string) (map[string][]byte, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{protoDir}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(context.Background(), Source)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", Source, err)
	}
	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{Source},
		Parameter:      proto.String(fmt.Sprintf("M%s=%s;kvpb,module=github.com/strata/chaos", Source, GoPackage)),
	}
	// The request lists every file in dependency order, as protoc does.
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(fd))
	}
	for _, f := range files {
		add(f)
	}
	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, err
	}
	for _, f := range plugin.Files {
		if f.Generate {
			gengo.GenerateFile(plugin, f)
		}
	}
	resp := plugin.Response()
	if resp.Error != nil {
		return nil, fmt.Errorf("generating: %s", resp.GetError())
	}
	out := map[string][]byte{}
	for _, f := range resp.File {
		out[f.GetName()] = []byte(f.GetContent())
	}
	return out, nil
}
