package cluster

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
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
