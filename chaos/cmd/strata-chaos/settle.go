package main

import (
	"time"

	"github.com/strata/chaos/history"
)

// settleAttempts bounds how often a write with an ambiguous answer is sent
// again under its request id; settleDelay is the pause between sends.
const (
	settleAttempts = 20
	settleDelay    = 250 * time.Millisecond
)

// settle sends op, a write carrying a request id, through send until an
// answer settles it or settleAttempts sends were made, and records it
// once, from its first call to its last answer: under one id every send
// is the same write, applied at most once, and a send after the first
// one applied is answered with that first answer (replayed). An answer
// settles the op when it is ok, or a refusal ("not applied") before any
// ambiguous answer. A refusal after an ambiguous answer says only that
// this send applied nothing, not the earlier one: the op stays ambiguous
// unless a later send is answered. late reports an ambiguous answer
// followed by a settling one; ok is false when the recorder is full.
func settle(kv kvStore, rec *history.Recorder, op *history.Op, send func(*history.Op)) (late, ok bool) {
	return settleN(kv, rec, op, send, settleAttempts)
}

// settleN is settle with at most sends sends.
func settleN(kv kvStore, rec *history.Recorder, op *history.Op, send func(*history.Op), sends int) (late, ok bool) {
	op.Via = kv.Kind()
	op.Call = rec.Now()
	ambiguous := false
	for op.Attempts = 1; ; op.Attempts++ {
		send(op)
		ambiguous = ambiguous || op.Result == history.Unknown
		if op.Result == history.Ok || (op.Result == history.Failed && !ambiguous) || op.Attempts >= sends {
			break
		}
		time.Sleep(settleDelay)
	}
	op.Return = rec.Now()
	if ambiguous && op.Result == history.Failed {
		op.Result, op.Note = history.Unknown, op.Note+" (after an ambiguous send)"
	}
	return ambiguous && op.Result != history.Unknown, rec.Add(history.Compact(*op))
}
