package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/strata/chaos/cluster"
	"github.com/strata/chaos/history"
)

// kvClient talks REST to the gateway and classifies every answer by the
// error contract: 200 ok; a node's own 503 UNAVAILABLE or a 4xx = not
// applied; everything else (504 OUTCOME_UNKNOWN, a 503 made by Envoy after a
// reset, 500, a timeout, a broken connection) = ambiguous.
type kvClient struct {
	http    *http.Client
	base    string
	timeout time.Duration
}

// gatewayClient is a kvClient for cl's gateway, sharing the cluster's
// connection pool; timeout bounds each operation (then it is ambiguous).
func gatewayClient(cl *cluster.Cluster, timeout time.Duration) *kvClient {
	return &kvClient{http: cl.HTTP, base: cl.GatewayURL(), timeout: timeout}
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// classify decides the outcome of a non-200 answer.
func classify(status int, body []byte) (history.Outcome, string) {
	var e apiError
	_ = json.Unmarshal(body, &e)
	note := fmt.Sprintf("%d %s %s", status, e.Code, truncate(e.Message, 120))
	if e.Code == "" {
		note = fmt.Sprintf("%d %s", status, truncate(string(body), 120))
	}
	switch {
	case status == 503 && e.Code == "UNAVAILABLE":
		return history.Failed, note
	case status >= 400 && status < 500 && e.Code != "":
		return history.Failed, note
	default:
		return history.Unknown, note
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (c *kvClient) do(method, path string, body []byte, ctype string, requestID string) (int, []byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	if ctype != "" {
		req.Header.Set("content-type", ctype)
	}
	if requestID != "" {
		req.Header.Set("x-strata-request-id", requestID)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, b, resp.Header.Get("x-strata-node"), err
}

// Get reads key with the default (linearizable) consistency into op.
func (c *kvClient) Get(op *history.Op) {
	st, body, node, err := c.do(http.MethodGet, "/v1/kv/"+url.PathEscape(op.Key), nil, "", "")
	op.Node = node
	switch {
	case err != nil:
		op.Result, op.Note = history.Unknown, errNote(err)
	case st == 200:
		op.Result, op.Found, op.Got = history.Ok, true, string(body)
	case st == 404 && isCode(body, "NOT_FOUND"):
		op.Result, op.Found = history.Ok, false
	default:
		op.Result, op.Note = classify(st, body)
	}
}

// Put writes op.Value.
func (c *kvClient) Put(op *history.Op) {
	st, body, node, err := c.do(http.MethodPut, "/v1/kv/"+url.PathEscape(op.Key), []byte(op.Value),
		"application/octet-stream", op.RequestID)
	op.Node = node
	switch {
	case err != nil:
		op.Result, op.Note = history.Unknown, errNote(err)
	case st == 200:
		op.Result = history.Ok
	default:
		op.Result, op.Note = classify(st, body)
	}
}

// Cas compares op.Key with op.Expected (or absence) and writes op.Value.
func (c *kvClient) Cas(op *history.Op) {
	req := map[string]any{"key": op.Key, "value": op.Value, "expected": op.Expected}
	if op.ExpectedAbsent {
		req["expected"] = nil
	}
	b, _ := json.Marshal(req)
	st, body, node, err := c.do(http.MethodPost, "/v1/cas", b, "application/json", op.RequestID)
	op.Node = node
	switch {
	case err != nil:
		op.Result, op.Note = history.Unknown, errNote(err)
	case st == 200:
		var r struct {
			Succeeded bool    `json:"succeeded"`
			Current   *string `json:"current"`
			Encoding  string  `json:"encoding"`
		}
		if err := json.Unmarshal(body, &r); err != nil || (r.Encoding != "" && r.Encoding != "utf8") {
			op.Result, op.Note = history.Unknown, "undecodable CAS answer: "+truncate(string(body), 200)
			return
		}
		op.Result, op.Succeeded = history.Ok, r.Succeeded
		if r.Current != nil {
			op.Found, op.Got = true, *r.Current
		}
	default:
		op.Result, op.Note = classify(st, body)
	}
}

// Kind names the front end.
func (c *kvClient) Kind() string { return "rest" }

// Batch writes every op (all puts) in one atomic POST /v1/batch and gives
// each the batch's outcome.
func (c *kvClient) Batch(ops []history.Op) {
	type batchOp struct {
		Op    string `json:"op"`
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	req := struct {
		Ops      []batchOp `json:"ops"`
		Encoding string    `json:"encoding"`
	}{Encoding: "utf8"}
	for _, op := range ops {
		req.Ops = append(req.Ops, batchOp{Op: "put", Key: op.Key, Value: op.Value})
	}
	b, _ := json.Marshal(req)
	st, body, node, err := c.do(http.MethodPost, "/v1/batch", b, "application/json", "")
	var result history.Outcome
	var note string
	switch {
	case err != nil:
		result, note = history.Unknown, errNote(err)
	case st == 200:
		result = history.Ok
	default:
		result, note = classify(st, body)
	}
	for i := range ops {
		ops[i].Result, ops[i].Note, ops[i].Node = result, note, node
	}
}

func isCode(body []byte, code string) bool {
	var e apiError
	return json.Unmarshal(body, &e) == nil && e.Code == code
}

func errNote(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "client timeout"
	}
	return truncate(err.Error(), 160)
}
