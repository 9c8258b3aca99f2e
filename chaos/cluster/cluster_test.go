package cluster

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A node's scan, as the convergence check reads it, follows every page and
// leaves out the canaries' keys, which change under it while they run.
func TestScanFollowsPagesAndLeavesOutCanaryKeys(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/kv" || r.URL.Query().Get("consistency") != "stale" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("page_token") == "" {
			fmt.Fprintf(w, `{"kvs":[{"key":%q,"value":%q},{"key":%q,"value":%q}],"next_page_token":"p2"}`,
				b64("__strata_canary/1/17-0/0"), b64("3"), b64("list/0"), b64("1 2"))
			return
		}
		fmt.Fprintf(w, `{"kvs":[{"key":%q,"value":%q}],"next_page_token":null}`, b64("reg/1"), b64("0.7"))
	}))
	defer srv.Close()
	_, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var port int
	fmt.Sscan(portText, &port)
	c := &Cluster{cfg: Config{BasePort: port - 1}, HTTP: srv.Client()}
	got, err := c.Scan(1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"list/0": "1 2", "reg/1": "0.7"}
	if d := Diff(want, got); d != "" || len(got) != len(want) {
		t.Errorf("scan %v, want %v (%s)", got, want, d)
	}
}

// A caller that stops while Start still waits for a leader (a signal during
// start-up) stops every process Start has started, through the Close that
// Track was given before the first one.
func TestTrackedCloseStopsWhatStartHasStartedSoFar(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("%d.%d", 3000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	launcher := filepath.Join(dir, "launcher")
	script := fmt.Sprintf("#!/bin/sh\n"+
		"if [ \"$1\" = auth ]; then echo '{\"jwks\":\"%s/auth/jwks.json\",\"token\":\"t\",\"node_token_file\":\"%s/auth/node.token\"}'; exit 0; fi\n"+
		"echo '{\"program\":\"sleep\",\"args\":[\"%s\"],\"env\":{}}'\n", dir, dir, marker)
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	alive := func() int {
		out, _ := exec.Command("pgrep", "-f", "^sleep "+marker+"$").Output()
		return len(strings.Fields(string(out)))
	}
	tracked := make(chan func(), 1)
	cfg := Config{Launcher: launcher, RunDir: dir, BasePort: 22980, Nodes: 3,
		Track: func(closeFn func()) { tracked <- closeFn }}
	go func() { _, _ = Start(cfg) }()
	closeFn := <-tracked
	deadline := time.Now().Add(10 * time.Second)
	for alive() < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := alive(); n != 4 {
		t.Fatalf("%d processes started, want 3 nodes and Envoy", n)
	}
	closeFn()
	if n := alive(); n != 0 {
		t.Errorf("%d processes still running after Close", n)
	}
}

// Every node's command line, a joining node's and a restart's alike, asks
// the launcher for the cluster's keys and the anonymous role "write", and
// Start refuses a launcher whose `auth` gives no token.
func TestNodesStartWithTheClusterKeys(t *testing.T) {
	dir := t.TempDir()
	launcher := filepath.Join(dir, "launcher")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = auth ]; then echo \"{\\\"jwks\\\":\\\"$3/jwks.json\\\",\\\"token\\\":\\\"tok-$5\\\",\\\"node_token_file\\\":\\\"$3/node.token\\\"}\"; exit 0; fi\n" +
		"shift\nprintf '{\"program\":\"x\",\"args\":[' ; sep=''\n" +
		"for a in \"$@\"; do printf '%s\"%s\"' \"$sep\" \"$a\"; sep=,; done\necho '],\"env\":{}}'\n"
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{cfg: Config{Launcher: launcher, NodeBin: "node", RunDir: dir, BasePort: 22900, Nodes: 3, Slots: 4}}
	a, err := auth(launcher, c.AuthDir(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	c.jwks, c.adminToken, c.nodeToken = a.JWKS, a.Token, a.NodeTokenFile
	for i := 1; i <= 4; i++ {
		c.nodes = append(c.nodes, &Node{ID: i, Port: c.NodePort(i), member: i <= 3, joined: i == 4})
	}
	if c.AdminToken() != "tok-admin" {
		t.Errorf("admin token %q", c.AdminToken())
	}
	if tok, err := c.Token("write"); err != nil || tok != "tok-write" {
		t.Errorf("write token %q, %v", tok, err)
	}
	want := "--auth-jwks " + filepath.Join(dir, "auth", "jwks.json") + " --anonymous-role write --token-file " +
		filepath.Join(dir, "auth", "node.token") + " --"
	for _, id := range []int{1, 4} {
		line, err := c.nodeCommand(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := line.String(); !strings.Contains(got, want) {
			t.Errorf("node %d: %s\nwant it to carry %q", id, got, want)
		}
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho '{\"jwks\":\"j\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(Config{Launcher: bad, RunDir: t.TempDir(), BasePort: 22900, Nodes: 1}); err == nil ||
		!strings.Contains(err.Error(), "no token") {
		t.Errorf("Start with a launcher that gives no token: %v", err)
	}
}
