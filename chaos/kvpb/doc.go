// Package kvpb is the Go code for strata.v1.KV's messages, generated from
// proto/strata/v1/kv.proto by internal/protogen (no protoc needed). The chaos
// harness calls the service with grpc.ClientConn.Invoke, so no service stubs
// are generated.
package kvpb

//go:generate go run ../internal/protogen/gen ..
