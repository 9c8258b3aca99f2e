// Package cluster runs a Strata cluster as native processes on 127.0.0.1
// behind a real Envoy, with a fault-injecting proxy on every directed link
// between nodes, and offers the faults the nemesis needs: kill -9, SIGSTOP /
// SIGCONT, link cuts and delays, restarts. The command line of every node
// and of Envoy (and Envoy's config) comes from the cluster launcher,
// `strata-cluster command`; this package decides ports and peers and runs
// the processes itself. Every process it starts is stopped by Close, by pid.
// The nodes check roles: the cluster makes one key pair (`strata-cluster
// auth`) and starts every node trusting it, with the anonymous role write;
// AdminToken is for what needs admin.
package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata/chaos/proxy"
)

// Config says what to run and where.
type Config struct {
	Launcher string // strata-cluster, which builds every command line
	NodeBin  string // strata-node
	Envoy    string // envoy binary
	RunDir   string // logs and data live here
	BasePort int    // every port is BasePort+0..99
	Nodes    int    // ids 1..Nodes form the initial configuration
	// Slots is the number of node ids with a port and proxied links
	// (default Nodes): ids Nodes+1..Slots are for nodes that join later.
	Slots int
	// NodeArgs are added to every node's command line.
	NodeArgs []string
	// DataDirs overrides the data directory of node i (index i-1).
	DataDirs []string
	// NodeEnv is added to every node's environment.
	NodeEnv []string
	// Track, when set, is given the cluster's Close before Start starts any
	// process, so that a caller stopping on a signal while Start waits for
	// a leader stops what Start has started so far.
	Track func(closeFn func())
}

// Node is one storage node.
type Node struct {
	ID      int
	Port    int
	DataDir string
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	// member: part of the configuration as far as the harness knows;
	// joined: started with --join; retired: removed, never started again.
	member, joined, retired bool
}

// Cluster is a running cluster.
type Cluster struct {
	cfg     Config
	mu      sync.Mutex
	nodes   []*Node
	proxies map[[2]int]*proxy.Proxy
	envoy   *exec.Cmd
	HTTP    *http.Client
	closed  bool
	// jwks is the public key file every node trusts; adminToken a token of
	// the admin role signed by its key (`strata-cluster auth`); nodeToken
	// the file of the token the nodes send with their own requests.
	jwks, adminToken, nodeToken string
}

// AnonymousRole is what a request without a token may do on every node:
// read and write keys and leases, as a deployment whose clients carry no
// credential would run; cluster administration needs the admin token.
const AnonymousRole = "write"

// authInfo is what `strata-cluster auth` prints.
type authInfo struct {
	JWKS  string `json:"jwks"`
	Token string `json:"token"`
	// NodeTokenFile holds the token nodes send with their own requests
	// (a --join request needs admin).
	NodeTokenFile string `json:"node_token_file"`
}

// auth runs `strata-cluster auth --dir dir --role role`: it makes the key
// pair in dir (or reads the one there) and returns its public keys' file
// and a token of role.
func auth(launcher, dir, role string) (authInfo, error) {
	var a authInfo
	out, err := exec.Command(launcher, "auth", "--dir", dir, "--role", role).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return a, fmt.Errorf("%s auth: %w", launcher, err)
	}
	if err := json.Unmarshal(out, &a); err != nil {
		return a, fmt.Errorf("%s auth: %w", launcher, err)
	}
	if a.JWKS == "" || a.Token == "" || a.NodeTokenFile == "" {
		return a, fmt.Errorf("%s auth printed no jwks, no token or no node token: %s", launcher, out)
	}
	return a, nil
}

// AuthDir holds the cluster's key pair.
func (c *Cluster) AuthDir() string { return filepath.Join(c.cfg.RunDir, "auth") }

// AdminToken is a token of the admin role the nodes take: membership,
// leadership, compaction, snapshots and backups need it.
func (c *Cluster) AdminToken() string { return c.adminToken }

// Token makes a token of role ("read", "write" or "admin") signed by the
// cluster's key.
func (c *Cluster) Token(role string) (string, error) {
	a, err := auth(c.cfg.Launcher, c.AuthDir(), role)
	return a.Token, err
}

// ForeignToken makes a token of role signed by a key pair of its own in
// dir, which the nodes do not trust.
func (c *Cluster) ForeignToken(dir, role string) (string, error) {
	a, err := auth(c.cfg.Launcher, dir, role)
	return a.Token, err
}

// Authorize makes req carry the admin token.
func (c *Cluster) Authorize(req *http.Request) {
	req.Header.Set("Authorization", "Bearer "+c.adminToken)
}

// NodePort is node id's port; ProxyPort the port of link from→to;
// GatewayPort Envoy's listener.
func (c *Cluster) NodePort(id int) int { return c.cfg.BasePort + id }

// ProxyPort is the port of the proxy for the directed link from→to.
func (c *Cluster) ProxyPort(from, to int) int {
	return c.cfg.BasePort + 50 + (from-1)*c.cfg.Slots + (to - 1)
}

// GatewayURL is Envoy's REST/gRPC address as a URL.
func (c *Cluster) GatewayURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.cfg.BasePort+40) }

// GatewayAddr is Envoy's listener address.
func (c *Cluster) GatewayAddr() string { return fmt.Sprintf("127.0.0.1:%d", c.cfg.BasePort+40) }

// NodeURL is node id's direct address as a URL.
func (c *Cluster) NodeURL(id int) string { return fmt.Sprintf("http://127.0.0.1:%d", c.NodePort(id)) }

// IDs lists the ids of the members, in order.
func (c *Cluster) IDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int
	for _, n := range c.nodes {
		if n.member {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// FreeSlot is an id that was never used, or 0.
func (c *Cluster) FreeSlot() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if !n.member && !n.retired {
			return n.ID
		}
	}
	return 0
}

// Proxied reports whether the links into node id pass through the proxies
// (a node that joined later is reached at its advertised address).
func (c *Cluster) Proxied(id int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.nodes[id-1].joined
}

// Start starts proxies, nodes and Envoy and waits until the gateway reaches
// a leader. On error everything started is stopped again.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Slots < cfg.Nodes {
		cfg.Slots = cfg.Nodes
	}
	if cfg.Slots > 6 || cfg.Nodes < 1 {
		return nil, fmt.Errorf("1..6 node slots, not %d nodes in %d slots", cfg.Nodes, cfg.Slots)
	}
	c := &Cluster{
		cfg:     cfg,
		proxies: map[[2]int]*proxy.Proxy{},
		HTTP: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		}},
	}
	if cfg.Track != nil {
		cfg.Track(c.Close)
	}
	if err := os.MkdirAll(filepath.Join(cfg.RunDir, "logs"), 0o755); err != nil {
		return nil, err
	}
	// One key pair for the cluster's life: every node, joining and
	// restarted ones too, trusts its public keys.
	a, err := auth(cfg.Launcher, c.AuthDir(), "admin")
	if err != nil {
		return nil, err
	}
	c.jwks, c.adminToken, c.nodeToken = a.JWKS, a.Token, a.NodeTokenFile
	for i := 1; i <= cfg.Slots; i++ {
		dd := filepath.Join(cfg.RunDir, "data", fmt.Sprintf("node%d", i))
		if len(cfg.DataDirs) >= i && cfg.DataDirs[i-1] != "" {
			dd = cfg.DataDirs[i-1]
		}
		if err := os.MkdirAll(dd, 0o755); err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, &Node{ID: i, Port: c.NodePort(i), DataDir: dd, member: i <= cfg.Nodes})
		for j := 1; j <= cfg.Slots; j++ {
			if i == j {
				continue
			}
			p, err := proxy.Listen(fmt.Sprintf("127.0.0.1:%d", c.ProxyPort(i, j)),
				fmt.Sprintf("127.0.0.1:%d", c.NodePort(j)))
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("proxy %d->%d: %w", i, j, err)
			}
			c.proxies[[2]int{i, j}] = p
		}
	}
	for i := 1; i <= cfg.Nodes; i++ {
		if err := c.StartNode(i); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.startEnvoy(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.WaitGatewayLeader(60 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// peersFor is node id's --peers: itself directly, every other node through
// the proxy of the link id→other. A node of the initial configuration lists
// that configuration; a joining node lists the members it asks to join.
func (c *Cluster) peersFor(id int) string {
	var parts []string
	var peers []int
	if c.Proxied(id) {
		for j := 1; j <= c.cfg.Nodes; j++ {
			peers = append(peers, j)
		}
	} else {
		for _, j := range c.IDs() {
			if j != id {
				peers = append(peers, j)
			}
		}
		peers = append(peers, id)
	}
	for _, j := range peers {
		port := c.NodePort(j)
		if j != id {
			port = c.ProxyPort(id, j)
		}
		parts = append(parts, fmt.Sprintf("%d=127.0.0.1:%d", j, port))
	}
	return strings.Join(parts, ",")
}

// LogDir holds one log file per process (node<id>.log, envoy.log).
func (c *Cluster) LogDir() string { return filepath.Join(c.cfg.RunDir, "logs") }

func (c *Cluster) logFile(name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(c.cfg.RunDir, "logs", name+".log"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// launched is a command line as the launcher prints it.
type launched struct {
	Program string            `json:"program"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// command asks the launcher for a command line (`strata-cluster command …`).
func (c *Cluster) command(args ...string) (launched, error) {
	var l launched
	out, err := exec.Command(c.cfg.Launcher, append([]string{"command"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return l, fmt.Errorf("%s command %s: %w", c.cfg.Launcher, args[0], err)
	}
	if err := json.Unmarshal(out, &l); err != nil {
		return l, fmt.Errorf("%s command %s: %w", c.cfg.Launcher, args[0], err)
	}
	return l, nil
}

// String is the command line as a shell would show it (for the logs).
func (l launched) String() string {
	return strings.Join(append([]string{l.Program}, l.Args...), " ")
}

// start runs a launched command line with its output appended to log and
// the extra environment on top of ours, in its own process group.
func (l launched) start(log *os.File, extraEnv []string) (*exec.Cmd, error) {
	cmd := exec.Command(l.Program, l.Args...)
	cmd.Env = os.Environ()
	for k, v := range l.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, cmd.Start()
}

// nodeCommand is the command line that starts node id: it listens on and
// advertises its own port, and reaches its peers as peersFor says.
func (c *Cluster) nodeCommand(id int) (launched, error) {
	n := c.nodes[id-1]
	addr := fmt.Sprintf("127.0.0.1:%d", n.Port)
	args := []string{"node", "--node-bin", c.cfg.NodeBin, "--id", fmt.Sprint(id), "--listen", addr,
		"--advertise", addr, "--peers", c.peersFor(id), "--data-dir", n.DataDir}
	if !c.Proxied(id) {
		args = append(args, "--join")
	}
	// A node started with --join asks to be added, which needs the admin
	// role: it sends its own token.
	args = append(args, "--auth-jwks", c.jwks, "--anonymous-role", AnonymousRole, "--token-file", c.nodeToken)
	return c.command(append(append(args, "--"), c.cfg.NodeArgs...)...)
}

// StartJoining starts the never-used node id with --join: it asks the
// members to add it as a learner, with its own token. The harness counts it
// a member from now.
func (c *Cluster) StartJoining(id int) error {
	c.mu.Lock()
	n := c.nodes[id-1]
	if n.member || n.retired {
		c.mu.Unlock()
		return fmt.Errorf("node %d was used already", id)
	}
	n.joined = true
	c.mu.Unlock()
	err := c.StartNode(id)
	c.mu.Lock()
	n.member = err == nil
	c.mu.Unlock()
	return err
}

// Retire kills node id (removed from the configuration) for good.
func (c *Cluster) Retire(id int) {
	c.Kill(id)
	c.mu.Lock()
	c.nodes[id-1].member, c.nodes[id-1].retired = false, true
	c.mu.Unlock()
}

// StartNode starts (or restarts) node id with its data directory.
func (c *Cluster) StartNode(id int) error {
	line, err := c.nodeCommand(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("cluster closed")
	}
	n := c.nodes[id-1]
	if n.cmd != nil {
		return fmt.Errorf("node %d is running", id)
	}
	if n.retired {
		return fmt.Errorf("node %d was removed", id)
	}
	log, err := c.logFile(fmt.Sprintf("node%d", id))
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "=== %s start: %s\n", time.Now().Format(time.RFC3339Nano), line)
	cmd, err := line.start(log, c.cfg.NodeEnv)
	if err != nil {
		return fmt.Errorf("starting node %d: %w", id, err)
	}
	n.cmd, n.paused = cmd, false
	n.exited = make(chan struct{})
	go func(ch chan struct{}) { _ = cmd.Wait(); close(ch) }(n.exited)
	return nil
}

// Running reports whether node id's process is alive (paused counts).
func (c *Cluster) Running(id int) bool {
	c.mu.Lock()
	n := c.nodes[id-1]
	cmd, exited := n.cmd, n.exited
	c.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// Exited lists nodes that were started and died on their own.
func (c *Cluster) Exited() []int {
	var out []int
	for _, id := range c.IDs() {
		c.mu.Lock()
		cmd := c.nodes[id-1].cmd
		c.mu.Unlock()
		if cmd != nil && !c.Running(id) {
			out = append(out, id)
		}
	}
	return out
}

// Pid is node id's process id, or 0 when it is not running.
func (c *Cluster) Pid(id int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cmd := c.nodes[id-1].cmd; cmd != nil && cmd.Process != nil {
		return cmd.Process.Pid
	}
	return 0
}

// Paused reports whether node id is stopped with SIGSTOP.
func (c *Cluster) Paused(id int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id-1].paused
}

// Kill sends SIGKILL to node id and waits for it to exit.
func (c *Cluster) Kill(id int) {
	c.mu.Lock()
	n := c.nodes[id-1]
	cmd, exited := n.cmd, n.exited
	n.cmd, n.paused = nil, false
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Terminate sends SIGTERM to node id (a graceful stop: the node drains and
// hands leadership over) and waits up to grace for it to exit, then kills
// it. It returns how long the node took and whether it exited on its own.
func (c *Cluster) Terminate(id int, grace time.Duration) (time.Duration, bool) {
	c.mu.Lock()
	n := c.nodes[id-1]
	cmd, exited, paused := n.cmd, n.exited, n.paused
	n.cmd, n.paused = nil, false
	c.mu.Unlock()
	if cmd == nil {
		return 0, true
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if paused {
		// A stopped process only sees the signal once it runs again.
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	select {
	case <-exited:
		return time.Since(start), true
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return time.Since(start), false
	}
}

// Pause sends SIGSTOP to node id; Resume sends SIGCONT.
func (c *Cluster) Pause(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id-1]
	if n.cmd != nil && !n.paused {
		_ = n.cmd.Process.Signal(syscall.SIGSTOP)
		n.paused = true
	}
}

// Resume undoes Pause.
func (c *Cluster) Resume(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[id-1]
	if n.cmd != nil && n.paused {
		_ = n.cmd.Process.Signal(syscall.SIGCONT)
		n.paused = false
	}
}

// Link is the proxy of the directed link from→to.
func (c *Cluster) Link(from, to int) *proxy.Proxy { return c.proxies[[2]int{from, to}] }

// Isolate cuts every link to and from node id.
func (c *Cluster) Isolate(id int) {
	for _, j := range c.IDs() {
		if j != id {
			c.Link(id, j).Cut()
			c.Link(j, id).Cut()
		}
	}
}

// HealLinks restores every link.
func (c *Cluster) HealLinks() {
	for _, p := range c.proxies {
		p.Heal()
	}
}

// HealAll resumes paused nodes, restores links and restarts dead nodes.
func (c *Cluster) HealAll() error {
	c.HealLinks()
	for _, id := range c.IDs() {
		c.Resume(id)
		if !c.Running(id) {
			c.mu.Lock()
			c.nodes[id-1].cmd = nil
			c.mu.Unlock()
			if err := c.StartNode(id); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) startEnvoy() error {
	// Every slot, so that nodes joining later are routed to as well.
	var nodes []string
	for id := 1; id <= c.cfg.Slots; id++ {
		nodes = append(nodes, fmt.Sprintf("127.0.0.1:%d", c.NodePort(id)))
	}
	line, err := c.command("envoy", "--envoy", c.cfg.Envoy, "--config", filepath.Join(c.cfg.RunDir, "envoy.yaml"),
		"--nodes", strings.Join(nodes, ","), "--listen", c.GatewayAddr(),
		"--admin", fmt.Sprintf("127.0.0.1:%d", c.cfg.BasePort+41),
		"--k6", fmt.Sprintf("127.0.0.1:%d", c.cfg.BasePort+43))
	if err != nil {
		return err
	}
	log, err := c.logFile("envoy")
	if err != nil {
		return err
	}
	defer log.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("cluster closed")
	}
	cmd, err := line.start(log, nil)
	if err != nil {
		return fmt.Errorf("starting envoy: %w", err)
	}
	c.envoy = cmd
	return nil
}

// Close stops every process and proxy. It is safe to call more than once
// and from a signal handler.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	envoy := c.envoy
	c.mu.Unlock()
	for _, n := range c.nodes {
		c.mu.Lock()
		cmd, exited := n.cmd, n.exited
		n.cmd = nil
		c.mu.Unlock()
		if cmd != nil {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Process.Signal(syscall.SIGCONT)
			<-exited
		}
	}
	if envoy != nil {
		_ = envoy.Process.Signal(syscall.SIGKILL)
		_, _ = envoy.Process.Wait()
	}
	for _, p := range c.proxies {
		p.Close()
	}
}

// Get fetches url with a timeout and returns status and body (status 0 on a
// transport error).
func (c *Cluster) Get(url string, timeout time.Duration) (int, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b
}

// Leader is the one running, unpaused node answering 200 on
// /health/leader, or 0.
func (c *Cluster) Leader() int {
	var leaders []int
	for _, id := range c.IDs() {
		if !c.Running(id) || c.Paused(id) {
			continue
		}
		if st, _ := c.Get(c.NodeURL(id)+"/health/leader", 500*time.Millisecond); st == 200 {
			leaders = append(leaders, id)
		}
	}
	if len(leaders) == 1 {
		return leaders[0]
	}
	return 0
}

// WaitGatewayLeader waits until Envoy routes /health/leader to a leader.
func (c *Cluster) WaitGatewayLeader(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, _ := c.Get(c.GatewayURL()+"/health/leader", time.Second); st == 200 {
			return nil
		}
		if dead := c.Exited(); len(dead) > 0 {
			return fmt.Errorf("nodes %v exited; logs in %s", dead, filepath.Join(c.cfg.RunDir, "logs"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("gateway found no leader within %v; logs in %s", timeout, filepath.Join(c.cfg.RunDir, "logs"))
}

// CanaryPrefix starts every key the nodes' consistency canaries write
// (`--canary`). Those keys change all the time while a canary runs, and
// belong to it, so Scan leaves them out.
const CanaryPrefix = "__strata_canary/"

// Scan reads node id's whole key space with consistency=stale, directly
// from that node, following pages; the canaries' keys are left out.
func (c *Cluster) Scan(id int) (map[string]string, error) {
	out := map[string]string{}
	token := ""
	for pages := 0; pages < 10000; pages++ {
		u := c.NodeURL(id) + "/v1/kv?consistency=stale&limit=1000&encoding=base64"
		if token != "" {
			u += "&page_token=" + url.QueryEscape(token)
		}
		st, body := c.Get(u, 5*time.Second)
		if st != 200 {
			return nil, fmt.Errorf("node %d scan: status %d %s", id, st, body)
		}
		var page struct {
			Kvs []struct {
				Key   []byte `json:"key"`
				Value []byte `json:"value"`
			} `json:"kvs"`
			NextPageToken *string `json:"next_page_token"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("node %d scan: %v", id, err)
		}
		for _, kv := range page.Kvs {
			if !strings.HasPrefix(string(kv.Key), CanaryPrefix) {
				out[string(kv.Key)] = string(kv.Value)
			}
		}
		if page.NextPageToken == nil || *page.NextPageToken == "" {
			return out, nil
		}
		token = *page.NextPageToken
	}
	return nil, fmt.Errorf("node %d scan: too many pages", id)
}

// WaitConverged polls every node's stale scan until all are equal and
// returns the common state, or the last difference found.
func (c *Cluster) WaitConverged(timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		var first map[string]string
		last = nil
		for _, id := range c.IDs() {
			s, err := c.Scan(id)
			if err != nil {
				last = err
				break
			}
			if first == nil {
				first = s
				continue
			}
			if d := Diff(first, s); d != "" {
				last = fmt.Errorf("node 1 and node %d differ: %s", id, d)
				break
			}
		}
		if last == nil {
			return first, nil
		}
		if time.Now().After(deadline) {
			return nil, last
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Diff describes the first few differences between two states ("" if equal).
func Diff(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, fmt.Sprintf("%q only in first", k))
		} else if w != v {
			d = append(d, fmt.Sprintf("%q: %q vs %q", k, clip(v), clip(w)))
		}
		if len(d) >= 5 {
			break
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && len(d) < 5 {
			d = append(d, fmt.Sprintf("%q only in second", k))
		}
	}
	return strings.Join(d, "; ")
}

// clip shortens a value for a report: long list values run to kilobytes.
func clip(v string) string {
	if len(v) > 60 {
		return v[:28] + "…" + v[len(v)-28:]
	}
	return v
}

// CanaryReport is what a node's consistency canary has found since the node
// started (`GET /v1/canary`); a restart begins a new report.
type CanaryReport struct {
	Enabled             bool   `json:"enabled"`
	WindowsOk           uint64 `json:"windows_ok"`
	WindowsViolation    uint64 `json:"windows_violation"`
	WindowsInconclusive uint64 `json:"windows_inconclusive"`
	// LastViolation is the latest window that was not linearizable.
	LastViolation *struct {
		Window string `json:"window"`
		Key    string `json:"key"`
	} `json:"last_violation"`
}

// Canary reads node id's canary report, directly from that node.
func (c *Cluster) Canary(id int, timeout time.Duration) (CanaryReport, error) {
	var r CanaryReport
	st, body := c.Get(c.NodeURL(id)+"/v1/canary", timeout)
	if st != 200 {
		return r, fmt.Errorf("node %d canary: status %d %s", id, st, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("node %d canary: %v", id, err)
	}
	return r, nil
}

// Slots is the number of node ids the cluster has room for (1..Slots).
func (c *Cluster) Slots() int { return c.cfg.Slots }

// NodeLog is node id's log file (every start of the node appends to it).
func (c *Cluster) NodeLog(id int) string {
	return filepath.Join(c.LogDir(), fmt.Sprintf("node%d.log", id))
}
