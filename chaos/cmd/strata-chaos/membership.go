package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata/chaos/cluster"
)

// The nemeses that change the group itself: replacing a voter by a node
// that joins during the load, and forcing a lagging follower to catch up by
// snapshot. Both leave the cluster changed for good (heal is a no-op), so
// the convergence check at the end covers the new shape.

// nodeStatus is the part of GET /v1/cluster/status a nemesis needs.
type nodeStatus struct {
	ID      int    `json:"id"`
	Term    uint64 `json:"term"`
	Applied uint64 `json:"applied_index"`
	Commit  uint64 `json:"commit_index"`
}

func localStatus(cl *cluster.Cluster, id int) (nodeStatus, bool) {
	st, body := cl.Get(cl.NodeURL(id)+"/v1/cluster/status", time.Second)
	if st != 200 {
		return nodeStatus{}, false
	}
	var s struct {
		Nodes []nodeStatus `json:"nodes"`
	}
	if json.Unmarshal(body, &s) != nil {
		return nodeStatus{}, false
	}
	for _, n := range s.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return nodeStatus{}, false
}

// members is GET /v1/cluster/members through the gateway: id → voter.
func members(cl *cluster.Cluster) (map[int]bool, error) {
	st, body := cl.Get(cl.GatewayURL()+"/v1/cluster/members", 2*time.Second)
	if st != 200 {
		return nil, fmt.Errorf("members: status %d %s", st, truncate(string(body), 120))
	}
	var r struct {
		Members []struct {
			ID    int  `json:"id"`
			Voter bool `json:"voter"`
		} `json:"members"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, m := range r.Members {
		out[m.ID] = m.Voter
	}
	return out, nil
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// post sends an admin request (membership changes, range splits) through
// the gateway with the admin token and `body` as JSON (none when nil),
// sending it again while the answer is one of `again` (or no answer came),
// for up to 10 s; the last status and the start of its body.
func post(cl *cluster.Cluster, path string, body []byte, again ...int) (int, string) {
	var st int
	var msg string
	waitFor(10*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodPost, cl.GatewayURL()+path, bytes.NewReader(body))
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		cl.Authorize(req)
		resp, err := cl.HTTP.Do(req)
		if err != nil {
			st, msg = 0, err.Error()
			return false
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		st, msg = resp.StatusCode, truncate(b.String(), 160)
		return !slices.Contains(again, st)
	})
	return st, msg
}

// replaceVoter starts a never-used node with --join, waits until it is a
// learner that has caught up, then promotes it while removing a voter (a
// third of the time the leader) in one joint-consensus change, and retires
// the old node.
func (n *nemesis) replaceVoter() (func(), string) {
	noop := func() {}
	id := n.cl.FreeSlot()
	if id == 0 {
		return noop, "skipped: no unused node slot left"
	}
	voters, err := members(n.cl)
	if err != nil {
		return noop, "skipped: " + err.Error()
	}
	old := n.follower()
	if n.rng.Intn(3) == 0 {
		old = n.leader()
	}
	if !voters[old] {
		return noop, fmt.Sprintf("skipped: node %d is not a voter", old)
	}
	if err := n.cl.StartJoining(id); err != nil {
		return noop, "join failed to start: " + err.Error()
	}
	if !waitFor(15*time.Second, func() bool {
		m, err := members(n.cl)
		_, listed := m[id]
		return err == nil && listed
	}) {
		return noop, fmt.Sprintf("node %d started with --join but was not added within 15 s", id)
	}
	// Caught up: its applied index reached the leader's commit index.
	leaderCommit := uint64(0)
	if l := n.cl.Leader(); l != 0 {
		if s, ok := localStatus(n.cl, l); ok {
			leaderCommit = s.Commit
		}
	}
	caughtUp := waitFor(20*time.Second, func() bool {
		s, ok := localStatus(n.cl, id)
		return ok && leaderCommit > 0 && s.Applied >= leaderCommit
	})
	st, msg := post(n.cl, fmt.Sprintf("/v1/cluster/members/%d/promote?replace=%d", id, old), nil, 503)
	// The joint configuration is left by a second entry: wait for it.
	var after map[int]bool
	waitFor(10*time.Second, func() bool {
		after, err = members(n.cl)
		return err == nil && after[id] && !has(after, old)
	})
	switch {
	case err != nil:
		return noop, fmt.Sprintf("node %d joined; promote replacing %d answered %d (%s), members unknown: %v",
			id, old, st, msg, err)
	case after[id] && !has(after, old):
		n.cl.Retire(old)
		n.replaced++
		return noop, fmt.Sprintf("node %d joined (caught up: %v), replaced voter %d (joint consensus); %d retired",
			id, caughtUp, old, old)
	case !has(after, old):
		n.cl.Retire(old)
		return noop, fmt.Sprintf("node %d joined; promote replacing %d answered %d (%s); %d removed and retired, members %v",
			id, old, st, msg, old, after)
	default:
		return noop, fmt.Sprintf("node %d joined as a learner; promote replacing %d answered %d (%s), members %v",
			id, old, st, msg, after)
	}
}

func has(m map[int]bool, id int) bool {
	_, ok := m[id]
	return ok
}

// snapshotCatchUp kills a follower, writes past enough log compactions
// that the leader no longer holds the entries it lacks, restarts it and
// waits until it has installed a snapshot and caught up.
func (n *nemesis) snapshotCatchUp() (func(), string) {
	noop := func() {}
	victim := n.follower()
	n.cl.Kill(victim)
	// Each put is one log entry; the cluster runs with a small compaction
	// threshold (see linearOpts.nodeArgs), so this passes it twice.
	written := n.writeFiller(2*compactLogEntries+compactKeepEntries, fmt.Sprintf("filler/%d/", n.rng.Int63()))
	logPath := filepath.Join(n.cl.LogDir(), fmt.Sprintf("node%d.log", victim))
	before := countInFile(logPath, "snapshot installed")
	if err := n.cl.StartNode(victim); err != nil {
		return noop, fmt.Sprintf("restart of node %d failed: %v", victim, err)
	}
	installed := waitFor(20*time.Second, func() bool { return countInFile(logPath, "snapshot installed") > before })
	n.snapshots += boolInt(installed)
	how := "caught up by snapshot"
	if !installed {
		how = "did NOT install a snapshot within 20 s"
	}
	return noop, fmt.Sprintf("killed follower %d, wrote %d entries past it, restarted: %s", victim, written, how)
}

// compactLogEntries / compactKeepEntries are the node's compaction policy
// in the linear runs: small, so that a short outage already needs a snapshot.
const (
	compactLogEntries  = 300
	compactKeepEntries = 100
)

// writeFiller puts count keys under prefix through the gateway, 8 at a
// time, bounded by 30 s; it returns how many were acknowledged.
func (n *nemesis) writeFiller(count int, prefix string) int {
	var mu sync.Mutex
	acked := 0
	deadline := time.Now().Add(30 * time.Second)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/v1/kv/%s%d", n.cl.GatewayURL(), prefix, i),
					strings.NewReader("x"))
				resp, err := n.cl.HTTP.Do(req)
				if err != nil {
					continue
				}
				_ = resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acked++
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < count && time.Now().Before(deadline); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return acked
}

func countInFile(path, needle string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), needle)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
