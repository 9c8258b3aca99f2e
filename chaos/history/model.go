package history

import (
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// register is the state of one key: absent, or present with a value.
type register struct {
	Exists bool
	Value  string
}

// input and output are what the model sees of an Op.
type input struct {
	Kind           Kind
	Key            string
	Value          string
	Expected       string
	ExpectedAbsent bool
	Txn            *TxnRequest
}

type output struct {
	Unknown   bool
	Found     bool
	Got       string
	Succeeded bool
	// Index and Results are a transaction's answer (TxnAnswer).
	Index   uint64
	Results []TxnResult
}

// txnPartition is the partition every transaction is in: the keys
// transactions touch (the bank's accounts) are touched by nothing else,
// and a transaction may touch any of them, so their state is one
// (accounts). It is not a key any client writes.
const txnPartition = "\x00txn"

// partitionOf is the partition an operation belongs to: its key, or
// txnPartition.
func partitionOf(in input) string {
	if in.Kind == Txn {
		return txnPartition
	}
	return in.Key
}

// step is the sequential specification of one key. Gets must see the
// current state; puts overwrite; a CAS succeeds exactly when the current
// state matches what it expects, and reports the value it found. An
// ambiguous put or CAS is applied as it would have been: the checker may
// also order it after everything else (its return time is infinite), which
// is the same as "never applied".
func step(st register, in input, out output) (bool, register) {
	switch in.Kind {
	case Get:
		if out.Found != st.Exists || (out.Found && out.Got != st.Value) {
			return false, st
		}
		return true, st
	case Put:
		return true, register{Exists: true, Value: in.Value}
	case Cas:
		matches := st.Exists && st.Value == in.Expected
		if in.ExpectedAbsent {
			matches = !st.Exists
		}
		next := st
		if matches {
			next = register{Exists: true, Value: in.Value}
		}
		if out.Unknown {
			return true, next
		}
		if out.Succeeded != matches || out.Found != st.Exists || (out.Found && out.Got != st.Value) {
			return false, st
		}
		return true, next
	}
	return false, st
}

func describe(r register) string {
	if !r.Exists {
		return "(absent)"
	}
	return fmt.Sprintf("%q", r.Value)
}

// Model is the Porcupine model of a key-value store with get, put and CAS,
// partitioned by key (state: register), and transactions, all in one
// partition (state: accounts). The initial state is nil: nothing exists.
var Model = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := partitionOf(op.Input.(input))
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return nil },
	Step: func(state, in, out interface{}) (bool, interface{}) {
		i := in.(input)
		if i.Kind == Txn {
			st, _ := state.(accounts)
			return stepTxn(st, i.Txn, out.(output))
		}
		st, _ := state.(register)
		return step(st, i, out.(output))
	},
	Equal: func(a, b interface{}) bool {
		if x, ok := a.(accounts); ok {
			y, ok := b.(accounts)
			return ok && maps.Equal(x, y)
		}
		if _, ok := b.(accounts); ok {
			return false
		}
		return a == b
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		res := ""
		switch {
		case i.Kind == Txn:
			return fmt.Sprintf("%s -> %s", i.Txn, describeTxnResult(o))
		case o.Unknown:
			res = "?"
		case i.Kind == Get && !o.Found:
			res = "absent"
		case i.Kind == Get:
			res = fmt.Sprintf("%q", o.Got)
		case i.Kind == Cas:
			res = fmt.Sprintf("%v (was %s)", o.Succeeded, describe(register{o.Found, o.Got}))
		default:
			res = "ok"
		}
		switch i.Kind {
		case Get:
			return fmt.Sprintf("get(%s) -> %s", i.Key, res)
		case Put:
			return fmt.Sprintf("put(%s, %q) -> %s", i.Key, i.Value, res)
		default:
			exp := fmt.Sprintf("%q", i.Expected)
			if i.ExpectedAbsent {
				exp = "absent"
			}
			return fmt.Sprintf("cas(%s, %s -> %q) -> %s", i.Key, exp, i.Value, res)
		}
	},
	DescribeState: func(state interface{}) string {
		switch st := state.(type) {
		case accounts:
			return describeAccounts(st)
		case register:
			return describe(st)
		}
		return "(nothing)"
	},
}

// Result is the outcome of a linearizability check.
type Result struct {
	// Verdict is porcupine's: "Ok", "Illegal" or "Unknown" (timed out).
	Verdict porcupine.CheckResult
	// Checked is how many operations went into the check.
	Checked int
	// Ambiguous is how many of them had an unknown outcome.
	Ambiguous int
}

// ToPorcupine turns recorded operations into Porcupine's. Operations that
// definitely failed, and reads (gets, read-only transactions) that did not
// complete, are left out (they had no effect). Ambiguous writes keep an
// infinite return time: after every other operation.
func ToPorcupine(ops []Op) []porcupine.Operation {
	var maxT int64
	for _, op := range ops {
		if op.Return > maxT {
			maxT = op.Return
		}
	}
	infinite := maxT + int64(time.Hour)
	var out []porcupine.Operation
	for _, op := range ops {
		readOnly := op.Kind == Get || (op.Kind == Txn && op.Txn.ReadOnly())
		if op.Result == Failed || (op.Result == Unknown && readOnly) {
			continue
		}
		ret := op.Return
		if op.Result == Unknown {
			ret = infinite
		}
		o := output{Unknown: op.Result == Unknown, Found: op.Found, Got: op.Got, Succeeded: op.Succeeded}
		if op.Answer != nil && !o.Unknown {
			o.Index, o.Results = op.Answer.Index, op.Answer.Results
		}
		out = append(out, porcupine.Operation{
			ClientId: op.Client,
			Input: input{Kind: op.Kind, Key: op.Key, Value: op.Value, Expected: op.Expected,
				ExpectedAbsent: op.ExpectedAbsent, Txn: op.Txn},
			Call:   op.Call,
			Output: o,
			Return: ret,
		})
	}
	return out
}

// CheckLinearizable checks ops against Model. When the history is not
// linearizable (or the check times out) and htmlPath is not empty, it
// writes Porcupine's visualization there.
func CheckLinearizable(ops []Op, timeout time.Duration, htmlPath string) (Result, error) {
	pops := ToPorcupine(ops)
	res := Result{Checked: len(pops)}
	for _, op := range pops {
		if op.Output.(output).Unknown {
			res.Ambiguous++
		}
	}
	verdict, info := porcupine.CheckOperationsVerbose(Model, pops, timeout)
	res.Verdict = verdict
	if verdict != porcupine.Ok && htmlPath != "" {
		if err := porcupine.VisualizePath(Model, info, htmlPath); err != nil {
			return res, err
		}
	}
	return res, nil
}
