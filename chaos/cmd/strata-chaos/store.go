package main

import (
	"time"

	"github.com/strata/chaos/history"
)

// kvStore is one client's front end to the gateway: REST (kvClient) or gRPC
// (grpcClient). Each fills in an op's outcome by its protocol's error
// contract: ok, failed (certainly not applied) or unknown (ambiguous).
type kvStore interface {
	Kind() string
	Get(op *history.Op)
	Put(op *history.Op)
	Cas(op *history.Op)
	// Batch applies every op (all puts) atomically in one request.
	Batch(ops []history.Op)
	// Txn runs op.Txn (with op.RequestID, when set) and fills in
	// op.Succeeded, op.Answer and op.Replayed.
	Txn(op *history.Op)
}

// retryAttempts bounds how often one operation is sent; retryDelay is the
// node's retry-after-ms hint.
const (
	retryAttempts = 4
	retryDelay    = 50 * time.Millisecond
)

// issue runs one operation and records every attempt; false when the
// recorder is full. It retries the way the shipped client lets a caller
// retry: only an answer that proves nothing was applied (REST: the node's
// 503 UNAVAILABLE; gRPC: UNAVAILABLE marked x-strata-retryable: true) is
// sent again, after the retry-after hint; an ambiguous answer never is.
// A CAS or a transaction is resent unchanged; a put's resend carries a
// distinct value, so that a refused attempt that took effect anyway stays
// visible to the checker instead of being hidden by its twin.
func issue(kv kvStore, rec *history.Recorder, op *history.Op) bool {
	value := op.Value
	for attempt := 0; ; attempt++ {
		if attempt > 0 && op.Kind == history.Put {
			op.Value = value + "r" + string(rune('0'+attempt))
		}
		op.Via = kv.Kind()
		op.Call = rec.Now()
		switch op.Kind {
		case history.Get:
			kv.Get(op)
		case history.Put:
			kv.Put(op)
		case history.Cas:
			kv.Cas(op)
		case history.Txn:
			kv.Txn(op)
		}
		op.Return = rec.Now()
		if !rec.Add(history.Compact(*op)) {
			return false
		}
		if op.Result != history.Failed || attempt+1 >= retryAttempts {
			if op.Result == history.Unknown {
				time.Sleep(retryDelay)
			}
			return true
		}
		time.Sleep(retryDelay)
		op.Result, op.Note, op.Found, op.Got, op.Succeeded = "", "", false, "", false
		op.Answer, op.Replayed = nil, false
	}
}

// issueBatch sends ops (puts) as one atomic batch, retried whole like
// issue (a resend's values carry the attempt number, as a put's do), and
// records each attempt's puts; false when the recorder is full.
func issueBatch(kv kvStore, rec *history.Recorder, ops []history.Op, id int64) bool {
	values := make([]string, len(ops))
	for i := range ops {
		values[i] = ops[i].Value
	}
	for attempt := 0; ; attempt++ {
		call := rec.Now()
		for i := range ops {
			ops[i].Kind, ops[i].Via, ops[i].Batch, ops[i].Call = history.Put, kv.Kind(), id, call
			if attempt > 0 {
				ops[i].Value = values[i] + "r" + string(rune('0'+attempt))
			}
		}
		kv.Batch(ops)
		ret := rec.Now()
		for i := range ops {
			ops[i].Return = ret
			if !rec.Add(history.Compact(ops[i])) {
				return false
			}
		}
		if ops[0].Result != history.Failed || attempt+1 >= retryAttempts {
			return true
		}
		time.Sleep(retryDelay)
	}
}
