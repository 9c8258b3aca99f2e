// Command strata-chaos runs Strata's reliability checks against a real
// cluster on 127.0.0.1 behind Envoy:
//
//	strata-chaos linear    concurrent clients + nemesis, Porcupine check
//	strata-chaos crashloop kill -9 / restart cycles under write load
//	strata-chaos diskfull  ENOSPC on small tmpfs data directories
//	strata-chaos diskfault fsync fails (EIO) under a follower, then the leader
//	strata-chaos snapfull  a follower's disk fills while it installs a snapshot
//	strata-chaos hostile   malformed and oversized gRPC / raft messages
//	strata-chaos exec      start a cluster, run a command against it, stop
//	strata-chaos check     re-check a saved history
//
// Every process it starts is killed on exit, also on SIGINT/SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata/chaos/cluster"
)

type common struct {
	root     string
	launcher string
	nodeBin  string
	envoy    string
	runDir   string
	basePort int
	seed     int64
}

// flagSet is command cmd's flag set, holding the flags every command shares;
// port is the command's own default first port, so that two commands can
// run side by side.
func (c *common) flagSet(cmd string, port int) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	fs.StringVar(&c.root, "root", "..", "repository root")
	fs.StringVar(&c.launcher, "launcher", "", "strata-cluster, the cluster launcher (default: <root>/storage/target/debug/strata-cluster)")
	fs.StringVar(&c.nodeBin, "node-bin", "", "strata-node binary (default: <root>/storage/target/debug/strata-node)")
	fs.StringVar(&c.envoy, "envoy", "", "envoy binary (default: <root>/.tools/venv/bin/envoy)")
	fs.StringVar(&c.runDir, "run-dir", "", "run directory (default: <root>/.run/chaos-<cmd>-<time>)")
	fs.IntVar(&c.basePort, "base-port", port, "first of 100 ports in 22000-22999")
	fs.Int64Var(&c.seed, "seed", time.Now().UnixNano()%1_000_000, "random seed")
	return fs
}

// parse parses the command's arguments, then fills in the defaults that
// depend on the repository root and on the command's name.
func (c *common) parse(fs *flag.FlagSet, args []string) {
	_ = fs.Parse(args)
	c.resolve(fs.Name())
}

func (c *common) resolve(cmd string) {
	c.root, _ = filepath.Abs(c.root)
	if c.launcher == "" {
		c.launcher = filepath.Join(c.root, "storage/target/debug/strata-cluster")
	}
	if c.nodeBin == "" {
		c.nodeBin = filepath.Join(c.root, "storage/target/debug/strata-node")
	}
	if c.envoy == "" {
		c.envoy = filepath.Join(c.root, ".tools/venv/bin/envoy")
	}
	if c.runDir == "" {
		c.runDir = filepath.Join(c.root, ".run", fmt.Sprintf("chaos-%s-%s", cmd, time.Now().Format("20060102-150405")))
	}
	c.runDir, _ = filepath.Abs(c.runDir)
	if c.basePort < 22000 || c.basePort+100 > 23000 {
		fatalf("base port %d outside 22000-22999", c.basePort)
	}
}

func (c *common) config(sub string, nodes int) cluster.Config {
	return cluster.Config{Launcher: c.launcher, NodeBin: c.nodeBin, Envoy: c.envoy,
		RunDir: filepath.Join(c.runDir, sub), BasePort: c.basePort, Nodes: nodes}
}

// cleanup runs registered functions once, at exit or on a signal. A
// function registered after cleanup began (a cluster still starting when
// the signal came) runs at once.
var cleanup struct {
	sync.Mutex
	fns  []func()
	done bool
}

func atExit(f func()) {
	cleanup.Lock()
	if cleanup.done {
		cleanup.Unlock()
		f()
		return
	}
	cleanup.fns = append(cleanup.fns, f)
	cleanup.Unlock()
}

func runCleanup() {
	cleanup.Lock()
	fns := cleanup.fns
	cleanup.fns, cleanup.done = nil, true
	cleanup.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "strata-chaos: "+format+"\n", args...)
	runCleanup()
	os.Exit(2)
}

// startCluster starts a cluster and makes sure it is stopped at exit.
func startCluster(cfg cluster.Config) *cluster.Cluster {
	cfg.Track = atExit
	cl, err := cluster.Start(cfg)
	if err != nil {
		fatalf("%v", err)
	}
	return cl
}

// commands are the subcommands, in the order the usage line names them.
var commands = []struct {
	name string
	run  func(args []string) int
}{
	{"linear", cmdLinear},
	{"crashloop", cmdCrashLoop},
	{"diskfull", cmdDiskFull},
	{"diskfault", cmdDiskFault},
	{"snapfull", cmdSnapshotFull},
	{"hostile", cmdHostile},
	{"exec", cmdExec},
	{"check", cmdCheck},
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// command is the subcommand called name, or nil.
func command(name string) func(args []string) int {
	for _, c := range commands {
		if c.name == name {
			return c.run
		}
	}
	return nil
}

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "strata-chaos: %v, stopping everything\n", s)
		runCleanup()
		os.Exit(130)
	}()
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: strata-chaos %s [flags]\n", strings.Join(commandNames(), "|"))
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	code := 2
	if run := command(name); run != nil {
		code = run(args)
	} else {
		fmt.Fprintf(os.Stderr, "unknown command %q\n", name)
	}
	runCleanup()
	os.Exit(code)
}

// commandLine reproduces the current invocation with a given seed, for the
// failure report.
func commandLine(seed int64) string {
	var parts []string
	skip := false
	for _, a := range os.Args[1:] {
		if skip {
			skip = false
			continue
		}
		if a == "-seed" || a == "--seed" {
			skip = true
			continue
		}
		if strings.HasPrefix(a, "-seed=") || strings.HasPrefix(a, "--seed=") || strings.HasPrefix(a, "-runs=") ||
			strings.HasPrefix(a, "--runs=") {
			continue
		}
		parts = append(parts, a)
	}
	return fmt.Sprintf("(cd chaos && go run ./cmd/strata-chaos %s -runs=1 -seed=%d)", strings.Join(parts, " "), seed)
}
