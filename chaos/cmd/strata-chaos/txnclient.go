package main

import (
	"encoding/json"
	"net/http"

	"github.com/strata/chaos/history"
	"github.com/strata/chaos/kvpb"
)

// A transaction through either front end: the request is op.Txn (and
// op.RequestID), the answer goes to op.Succeeded, op.Answer (the raft
// index it was applied at, the results of the branch that ran) and
// op.Replayed. Failures are classified like every other call of the
// front end.

type txnCompareJSON struct {
	Key      string  `json:"key"`
	Exists   *bool   `json:"exists,omitempty"`
	ModIndex *uint64 `json:"mod_index,omitempty"`
}

type txnOpJSON struct {
	Op    string  `json:"op"`
	Key   string  `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
	Start string  `json:"start,omitempty"`
	End   string  `json:"end,omitempty"`
}

type txnKVJSON struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	CreateIndex uint64 `json:"create_index"`
	ModIndex    uint64 `json:"mod_index"`
}

type txnResultJSON struct {
	Found *bool       `json:"found"`
	KV    *txnKVJSON  `json:"kv"`
	KVs   []txnKVJSON `json:"kvs"`
	More  bool        `json:"more"`
}

type txnAnswerJSON struct {
	Succeeded bool            `json:"succeeded"`
	Results   []txnResultJSON `json:"results"`
	Encoding  string          `json:"encoding"`
	Index     uint64          `json:"index"`
	Replayed  bool            `json:"replayed"`
}

func txnOpsJSON(ops []history.TxnOp) []txnOpJSON {
	out := make([]txnOpJSON, 0, len(ops))
	for _, op := range ops {
		j := txnOpJSON{Op: op.Op, Key: op.Key, Start: op.Start, End: op.End}
		if op.Op == history.TxnPut {
			j.Value = &op.Value
		}
		out = append(out, j)
	}
	return out
}

// Txn sends op.Txn as POST /v1/txn (utf8) with op.RequestID as
// x-strata-request-id.
func (c *kvClient) Txn(op *history.Op) {
	req := struct {
		Compare  []txnCompareJSON `json:"compare,omitempty"`
		Success  []txnOpJSON      `json:"success,omitempty"`
		Failure  []txnOpJSON      `json:"failure,omitempty"`
		Encoding string           `json:"encoding"`
	}{Success: txnOpsJSON(op.Txn.Success), Failure: txnOpsJSON(op.Txn.Failure), Encoding: "utf8"}
	absent := false
	for _, cmp := range op.Txn.Compares {
		j := txnCompareJSON{Key: cmp.Key}
		if cmp.Absent {
			j.Exists = &absent
		} else {
			j.ModIndex = &cmp.ModIndex
		}
		req.Compare = append(req.Compare, j)
	}
	b, _ := json.Marshal(req)
	st, body, node, err := c.do(http.MethodPost, "/v1/txn", b, "application/json", op.RequestID)
	op.Node, op.Answer, op.Succeeded, op.Replayed = node, nil, false, false
	switch {
	case err != nil:
		op.Result, op.Note = history.Unknown, errNote(err)
	case st == 200:
		var r txnAnswerJSON
		if err := json.Unmarshal(body, &r); err != nil || r.Encoding != "utf8" {
			op.Result, op.Note = history.Unknown, "undecodable transaction answer: "+truncate(string(body), 200)
			return
		}
		a := &history.TxnAnswer{Index: r.Index}
		for _, res := range r.Results {
			out := history.TxnResult{Found: res.Found != nil && *res.Found, More: res.More}
			if res.KV != nil {
				out.KVs = append(out.KVs, history.KeyValue(*res.KV))
			}
			for _, kv := range res.KVs {
				out.KVs = append(out.KVs, history.KeyValue(kv))
			}
			a.Results = append(a.Results, out)
		}
		op.Result, op.Succeeded, op.Replayed, op.Answer = history.Ok, r.Succeeded, r.Replayed, a
	default:
		op.Result, op.Note = classify(st, body)
	}
}

func txnOpsPB(ops []history.TxnOp) []*kvpb.TxnOp {
	out := make([]*kvpb.TxnOp, 0, len(ops))
	for _, op := range ops {
		switch op.Op {
		case history.TxnPut:
			out = append(out, &kvpb.TxnOp{Op: &kvpb.TxnOp_Put{Put: &kvpb.PutOp{Key: []byte(op.Key), Value: []byte(op.Value)}}})
		case history.TxnGet:
			out = append(out, &kvpb.TxnOp{Op: &kvpb.TxnOp_Get{Get: &kvpb.GetOp{Key: []byte(op.Key)}}})
		case history.TxnRange:
			out = append(out, &kvpb.TxnOp{Op: &kvpb.TxnOp_Range{Range: &kvpb.RangeOp{Start: []byte(op.Start), End: []byte(op.End)}}})
		}
	}
	return out
}

func keyValuePB(kv *kvpb.KeyValue) history.KeyValue {
	return history.KeyValue{Key: string(kv.GetKey()), Value: string(kv.GetValue()),
		CreateIndex: kv.GetCreateIndex(), ModIndex: kv.GetModIndex()}
}

// Txn sends op.Txn as strata.v1.KV/Txn with op.RequestID as request_id.
func (c *grpcClient) Txn(op *history.Op) {
	req := &kvpb.TxnRequest{Success: txnOpsPB(op.Txn.Success), Failure: txnOpsPB(op.Txn.Failure), RequestId: op.RequestID}
	for _, cmp := range op.Txn.Compares {
		pc := &kvpb.Compare{Key: []byte(cmp.Key), Op: kvpb.CompareOp_COMPARE_OP_EQUAL}
		if cmp.Absent {
			pc.Target = &kvpb.Compare_Exists{Exists: false}
		} else {
			pc.Target = &kvpb.Compare_ModIndex{ModIndex: cmp.ModIndex}
		}
		req.Compare = append(req.Compare, pc)
	}
	var resp kvpb.TxnResponse
	node, err := c.call("Txn", req, &resp, func() uint64 { return resp.GetHeader().GetNodeId() })
	op.Node, op.Answer, op.Succeeded, op.Replayed = node, nil, false, false
	if err != nil {
		op.Result, op.Note = grpcOutcome(err)
		return
	}
	a := &history.TxnAnswer{Index: resp.GetHeader().GetIndex()}
	for _, r := range resp.GetResults() {
		var out history.TxnResult
		switch x := r.GetResult().(type) {
		case *kvpb.TxnOpResult_Get:
			out.Found = x.Get.GetFound()
			if kv := x.Get.GetKv(); kv != nil {
				out.KVs = append(out.KVs, keyValuePB(kv))
			}
		case *kvpb.TxnOpResult_Range:
			out.More = x.Range.GetMore()
			for _, kv := range x.Range.GetKvs() {
				out.KVs = append(out.KVs, keyValuePB(kv))
			}
		}
		a.Results = append(a.Results, out)
	}
	op.Result, op.Succeeded, op.Replayed, op.Answer = history.Ok, resp.GetSucceeded(), resp.GetHeader().GetReplayed(), a
}
