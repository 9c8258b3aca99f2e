// Command etcd builds the etcd 3.6 server for `just bench-compare`.
//
// `go install go.etcd.io/etcd/v3@v3.6.x` fails because etcd's root module carries replace
// directives; requiring the server module from a module of our own and calling its entry point
// builds the same binary from the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
