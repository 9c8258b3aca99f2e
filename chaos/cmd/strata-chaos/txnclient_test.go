package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/strata/chaos/history"
)

// The REST client sends a transaction as POST /v1/txn takes it (no null
// lists, one target per compare, a put's value even when empty, the
// request id as x-strata-request-id) and reads the answer's results,
// index and replay mark.
func TestRESTTxn_requestAndAnswer(t *testing.T) {
	var body, id string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body, id = string(b), r.Header.Get("x-strata-request-id")
		w.Header().Set("x-strata-node", "2")
		_, _ = io.WriteString(w, `{"succeeded":false,"results":[{"op":"get","found":true,"kv":{"key":"bank/0","value":"7","create_index":1,"mod_index":5}},`+
			`{"op":"range","kvs":[{"key":"bank/1","value":"13","create_index":1,"mod_index":5}],"more":false}],`+
			`"encoding":"utf8","node_id":2,"term":3,"index":9,"leader_id":2,"replayed":true}`)
	}))
	defer srv.Close()
	c := &kvClient{http: srv.Client(), base: srv.URL, timeout: time.Second}

	audit := auditOp(0)
	c.Txn(&audit)
	if body != `{"success":[{"op":"range","start":"bank/","end":"bank0"}],"encoding":"utf8"}` || id != "" {
		t.Errorf("audit sent %s (id %q)", body, id)
	}
	op := history.Op{Kind: history.Txn, RequestID: "bank-1-2", Txn: &history.TxnRequest{
		Compares: []history.Compare{{Key: "bank/0", ModIndex: 5, Value: "7"}, {Key: "bank/1", Absent: true}},
		Success:  []history.TxnOp{{Op: history.TxnPut, Key: "bank/0", Value: ""}},
		Failure:  []history.TxnOp{{Op: history.TxnGet, Key: "bank/0"}, {Op: history.TxnRange, Start: "bank/1", End: "bank/2"}},
	}}
	c.Txn(&op)
	want := `{"compare":[{"key":"bank/0","mod_index":5},{"key":"bank/1","exists":false}],"success":[{"op":"put","key":"bank/0","value":""}],` +
		`"failure":[{"op":"get","key":"bank/0"},{"op":"range","start":"bank/1","end":"bank/2"}],"encoding":"utf8"}`
	if body != want || id != "bank-1-2" {
		t.Errorf("sent %s (id %q), want %s", body, id, want)
	}
	a := op.Answer
	if op.Result != history.Ok || op.Succeeded || !op.Replayed || op.Node != "2" || a == nil || a.Index != 9 || len(a.Results) != 2 ||
		!a.Results[0].Found || a.Results[0].KVs[0] != (history.KeyValue{Key: "bank/0", Value: "7", CreateIndex: 1, ModIndex: 5}) ||
		len(a.Results[1].KVs) != 1 || a.Results[1].KVs[0].Value != "13" {
		t.Errorf("answer %+v %+v", op, a)
	}
}
