package main

// Ranges under chaos: with -split-at, a run splits the key space at the
// given keys before its load starts (POST /v1/cluster/ranges/split), so
// that its clients' keys are served by several raft groups, each with its
// own leader, while the nemesis strikes. Each workload family keeps its
// keys in one range (a batch or transaction over two ranges is refused).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/strata/chaos/cluster"
)

// splitKeys parses -split-at: the keys, in the order given; none for "".
func splitKeys(list string) []string {
	var keys []string
	for _, k := range strings.Split(list, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// splitAt splits the range holding each key at it, through the gateway,
// as admin; the refusals, as problems. A 503 or 504 is asked again for up
// to 10 s (a split asked again at the same key splits nothing).
func splitAt(cl *cluster.Cluster, keys []string) []string {
	var problems []string
	for _, key := range keys {
		body, _ := json.Marshal(map[string]string{"key": key})
		if st, msg := post(cl, "/v1/cluster/ranges/split", body, 503, 504); st != 200 {
			problems = append(problems, fmt.Sprintf("split at %q: %d %s", key, st, msg))
		}
	}
	return problems
}

// rangeCount is how many ranges the cluster's status lists (0: unknown).
func rangeCount(cl *cluster.Cluster) int {
	req, _ := http.NewRequest(http.MethodGet, cl.GatewayURL()+"/v1/cluster/status", nil)
	cl.Authorize(req)
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var st struct {
		Ranges []json.RawMessage `json:"ranges"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return 0
	}
	return len(st.Ranges)
}
