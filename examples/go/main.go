// Strata from Go with the standard library (REST through the gateway): a write with a
// request id sent twice and applied once, a read, a compare-and-swap, an update in a
// transaction guarded by the key's mod index (sent again when stale, it takes its failure
// branch), a watch of the prefix from the first write's raft index that must replay exactly
// these changes, and a key under a lease that goes when the lease is revoked.
//
//	STRATA_URL=http://127.0.0.1:8080 go run .
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

var base = envOr("STRATA_URL", "http://127.0.0.1:8080")

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

type written struct {
	Index    uint64 `json:"index"`
	Replayed bool   `json:"replayed"`
}

func call(method, path string, body string, headers map[string]string, out any) error {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if s, ok := out.(*string); ok {
		*s = string(b)
		return nil
	}
	return json.Unmarshal(b, out)
}

type change struct {
	Index uint64
	Type  string
	Key   string
	Value string
}

// watch reads the server-sent events of a watch of prefix from a raft index until one
// reaches until.
func watch(prefix string, from, until uint64) ([]change, error) {
	url := fmt.Sprintf("%s/v1/watch?prefix=%s&from_index=%d&progress_ms=200", base, prefix, from)
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []change
	var event string
	var data bytes.Buffer
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimSpace(line[5:]))
		case line == "" && event != "":
			var body struct {
				Index   uint64 `json:"index"`
				Changes []struct {
					Type  string `json:"type"`
					Key   string `json:"key"`
					Value string `json:"value"`
				} `json:"changes"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(data.Bytes(), &body); err != nil {
				return nil, err
			}
			if event == "ended" {
				return nil, fmt.Errorf("the watch ended: %s", body.Message)
			}
			for _, c := range body.Changes {
				out = append(out, change{body.Index, c.Type, c.Key, c.Value})
			}
			if body.Index >= until {
				return out, nil
			}
			event = ""
			data.Reset()
		}
	}
	return nil, fmt.Errorf("the event stream closed early: %v", lines.Err())
}

type keyValue struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	ModIndex uint64 `json:"mod_index"`
	Lease    uint64 `json:"lease"`
}

type txnResult struct {
	written
	Succeeded bool `json:"succeeded"`
	Results   []struct {
		Op string    `json:"op"`
		KV *keyValue `json:"kv"`
	} `json:"results"`
}

var jsonBody = map[string]string{"content-type": "application/json"}

// updateIfUnchanged puts value under key only if nobody wrote key since modIndex, else reads it.
func updateIfUnchanged(key string, modIndex uint64, value string) (txnResult, error) {
	body, _ := json.Marshal(map[string]any{
		"compare": []any{map[string]any{"key": key, "mod_index": modIndex}},
		"success": []any{map[string]any{"op": "put", "key": key, "value": value}},
		"failure": []any{map[string]any{"op": "get", "key": key}},
	})
	var out txnResult
	err := call("POST", "/v1/txn", string(body), jsonBody, &out)
	return out, err
}

// leasedKeyEndsWithItsLease puts a key under a new lease and revokes the lease: the key goes.
func leasedKeyEndsWithItsLease(key string) error {
	var lease struct {
		ID uint64 `json:"id"`
	}
	if err := call("POST", "/v1/leases", `{"ttl":"10s"}`, jsonBody, &lease); err != nil {
		return err
	}
	if err := call("PUT", fmt.Sprintf("/v1/kv/%s?lease=%d", key, lease.ID), "online", nil, nil); err != nil {
		return err
	}
	var revoked struct {
		KeysDeleted uint64 `json:"keys_deleted"`
	}
	if err := call("DELETE", fmt.Sprintf("/v1/leases/%d", lease.ID), "", nil, &revoked); err != nil {
		return err
	}
	if revoked.KeysDeleted != 1 {
		return fmt.Errorf("the revoke deleted %d keys, want 1", revoked.KeysDeleted)
	}
	if err := call("GET", "/v1/kv/"+key, "", nil, nil); err == nil || !strings.Contains(err.Error(), ": 404 ") {
		return fmt.Errorf("the key outlived its lease: %v", err)
	}
	return nil
}

func run() error {
	prefix := fmt.Sprintf("go-example/%d/", time.Now().UnixMilli())
	key := prefix + "greeting"
	id := map[string]string{"x-strata-request-id": prefix + "req-1"}
	var first, again written
	if err := call("PUT", "/v1/kv/"+key, "hello", id, &first); err != nil {
		return err
	}
	if err := call("PUT", "/v1/kv/"+key, "hello", id, &again); err != nil {
		return err
	}
	if !again.Replayed || again.Index != first.Index {
		return fmt.Errorf("the resend was not a replay of the first write: %+v vs %+v", again, first)
	}
	var value string
	if err := call("GET", "/v1/kv/"+key, "", nil, &value); err != nil || value != "hello" {
		return fmt.Errorf("read %q: %v", value, err)
	}
	var swap struct {
		written
		Succeeded bool `json:"succeeded"`
	}
	cas := fmt.Sprintf(`{"key":%q,"expected":"hello","value":"hi"}`, key)
	if err := call("POST", "/v1/cas", cas, map[string]string{"content-type": "application/json"}, &swap); err != nil {
		return err
	}
	if !swap.Succeeded {
		return fmt.Errorf("the swap failed")
	}
	var read keyValue
	if err := call("GET", "/v1/kv/"+key, "", map[string]string{"accept": "application/json"}, &read); err != nil {
		return err
	}
	if read.Value != "hi" || read.ModIndex != swap.Index {
		return fmt.Errorf("read %+v after the swap at %d", read, swap.Index)
	}
	txn, err := updateIfUnchanged(key, read.ModIndex, "hey")
	if err != nil || !txn.Succeeded {
		return fmt.Errorf("the transaction did not apply: %+v %v", txn, err)
	}
	stale, err := updateIfUnchanged(key, read.ModIndex, "too late")
	if err != nil || stale.Succeeded || stale.Results[0].KV == nil || stale.Results[0].KV.Value != "hey" {
		return fmt.Errorf("the stale transaction: %+v %v", stale, err)
	}
	got, err := watch(prefix, first.Index, txn.Index)
	if err != nil {
		return err
	}
	want := []change{{first.Index, "put", key, "hello"}, {swap.Index, "put", key, "hi"}, {txn.Index, "put", key, "hey"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("watch replayed %v, want %v", got, want)
	}
	if err := leasedKeyEndsWithItsLease("go-example-leased/" + prefix); err != nil {
		return err
	}
	fmt.Printf("go example: ok (put at %d once though sent twice, swapped at %d, updated in a transaction at %d, "+
		"watch replayed %d changes, a leased key ended with its lease)\n", first.Index, swap.Index, txn.Index, len(got))
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "go example: FAILED: %v\n", err)
		os.Exit(1)
	}
}
