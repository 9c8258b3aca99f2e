package main

import (
	"testing"

	"github.com/strata/chaos/history"
)

// scripted answers each send with the next outcome of a script.
type scripted struct {
	txnStore
	script []history.Outcome
}

func (s *scripted) send(op *history.Op) {
	op.Result, s.script = s.script[0], s.script[1:]
}

// A write is settled by an ok answer, or by a refusal that came before any
// ambiguous answer; a refusal after an ambiguous answer leaves it
// ambiguous (the earlier send may have been applied) and it is sent again.
func TestSettle_refusalAfterAmbiguousAnswerSettlesNothing(t *testing.T) {
	u, f, ok := history.Unknown, history.Failed, history.Ok
	cases := []struct {
		script []history.Outcome
		want   history.Outcome
		sends  int
		late   bool
	}{
		{[]history.Outcome{ok}, ok, 1, false},
		{[]history.Outcome{f}, f, 1, false},
		{[]history.Outcome{u, f, ok}, ok, 3, true},
		{[]history.Outcome{u, u, f}, u, 3, false},
		{[]history.Outcome{u, u}, u, 2, false},
	}
	for _, c := range cases {
		s := &scripted{script: c.script}
		rec := history.NewRecorder(10)
		op := history.Op{Kind: history.Cas, Key: "k", RequestID: "id"}
		late, _ := settleN(s, rec, &op, s.send, len(c.script))
		if op.Result != c.want || op.Attempts != c.sends || late != c.late {
			t.Errorf("%v: %s after %d sends (late %v), want %s after %d (late %v)",
				c.script, op.Result, op.Attempts, late, c.want, c.sends, c.late)
		}
	}
}
