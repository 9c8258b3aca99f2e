package history

import (
	"fmt"
	"maps"
	"sort"
	"strings"
)

// accounts is the state of the keys transactions touch (the bank's
// accounts): key → record, absent keys left out. Steps never change a
// state they are given; they return a new one.
type accounts map[string]record

// record is one existing key: its value and the raft indexes of the write
// that created it and of the one that last put it. An index is 0 when the
// model does not know it: the key was last written by a transaction whose
// answer never came, so the entry it was applied at is unknown. The next
// read of the key tells it (bind).
type record struct {
	Value  string
	Create uint64
	Mod    uint64
}

// verdict is what the model knows of a transaction's compares.
type verdict int

const (
	fails verdict = iota
	holds
	// unsure: a compare's key was last written at an unknown index.
	unsure
)

// compares judges t's compares against st as the node does: "absent"
// holds when the key does not exist; "mod index = M" holds when the key
// exists and its last put was at M. When the model does not know the
// index of that put, it judges by value: the put at M wrote the value the
// client read with M (Compare.Value), so a key holding another value
// fails the compare, and one holding that value may pass it or fail it.
// Comparing values alone would not be sound: a transfer and its reverse
// restore the values while the mod index moves on, and the node then
// rightly refuses a compare whose values still match.
func compares(st accounts, cs []Compare) verdict {
	v := holds
	for _, c := range cs {
		r, ok := st[c.Key]
		switch {
		case c.Absent:
			if ok {
				return fails
			}
		case !ok:
			return fails
		case r.Mod != 0:
			if r.Mod != c.ModIndex {
				return fails
			}
		case r.Value != c.Value:
			return fails
		default:
			v = unsure
		}
	}
	return v
}

// stepTxn is the sequential specification of a transaction. The branch
// the compares pick runs in order: a put gives its key the value and the
// transaction's index as mod index (and as create index when the key did
// not exist); a get or a range must read exactly the state as the
// operations before it left it, indexes included. An answered transaction
// must report the branch its compares pick; when the model is unsure
// which (see compares), either is legal, and a success tells the unknown
// indexes. An ambiguous transaction whose compares may hold is applied
// with unknown indexes; Porcupine may also order it after everything
// else, which is the same as "never applied" or "its compares failed",
// because a failure branch only reads (TxnRequest).
func stepTxn(st accounts, t *TxnRequest, out output) (bool, accounts) {
	v := compares(st, t.Compares)
	if out.Unknown {
		if v == fails {
			return runBranch(st, t.Failure, 0, nil)
		}
		return runBranch(st, t.Success, 0, nil)
	}
	if (out.Succeeded && v == fails) || (!out.Succeeded && v == holds) {
		return false, st
	}
	branch := t.Failure
	if out.Succeeded {
		branch = t.Success
		for _, c := range t.Compares {
			if r, ok := st[c.Key]; ok && !c.Absent && r.Mod == 0 {
				r.Mod = c.ModIndex
				st = with(st, c.Key, r)
			}
		}
	}
	if len(out.Results) != len(branch) {
		return false, st
	}
	return runBranch(st, branch, out.Index, out.Results)
}

// runBranch applies ops to st at index (0: unknown) and checks each read
// against results (nil: not known, nothing to check).
func runBranch(st accounts, ops []TxnOp, index uint64, results []TxnResult) (bool, accounts) {
	for i, op := range ops {
		switch op.Op {
		case TxnPut:
			r := record{Value: op.Value, Create: index, Mod: index}
			if old, ok := st[op.Key]; ok {
				r.Create = old.Create
			}
			st = with(st, op.Key, r)
		case TxnGet, TxnRange:
			if results == nil {
				continue
			}
			var ok bool
			if ok, st = read(st, op, results[i]); !ok {
				return false, st
			}
		default:
			return false, st
		}
	}
	return true, st
}

// read checks one get or range result against st: the same keys, values
// and indexes, nothing left out. Indexes the model does not know are
// taken from the result.
func read(st accounts, op TxnOp, res TxnResult) (bool, accounts) {
	var want []string
	if op.Op == TxnGet {
		if _, ok := st[op.Key]; ok {
			want = []string{op.Key}
		}
		if res.Found != (len(want) == 1) {
			return false, st
		}
	} else {
		for k := range st {
			if k >= op.Start && (op.End == "" || k < op.End) {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		if res.More {
			return false, st
		}
	}
	if len(res.KVs) != len(want) {
		return false, st
	}
	for i, k := range want {
		kv, r := res.KVs[i], st[k]
		if kv.Key != k || kv.Value != r.Value {
			return false, st
		}
		bound := r
		if !bindIndex(&bound.Create, kv.CreateIndex) || !bindIndex(&bound.Mod, kv.ModIndex) {
			return false, st
		}
		if bound != r {
			st = with(st, k, bound)
		}
	}
	return true, st
}

// bindIndex checks a read index against the model's (0: unknown, then
// the read one is taken).
func bindIndex(model *uint64, read uint64) bool {
	if *model == 0 {
		*model = read
		return true
	}
	return *model == read
}

// with is st with key set to r, as a new map.
func with(st accounts, key string, r record) accounts {
	next := make(accounts, len(st)+1)
	maps.Copy(next, st)
	next[key] = r
	return next
}

func describeAccounts(st accounts) string {
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q c%s m%s", k, st[k].Value, describeIndex(st[k].Create), describeIndex(st[k].Mod)))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func describeIndex(i uint64) string {
	if i == 0 {
		return "?"
	}
	return fmt.Sprint(i)
}

// describeTxnResult shows what a transaction's answer said.
func describeTxnResult(o output) string {
	if o.Unknown {
		return "?"
	}
	var parts []string
	for _, r := range o.Results {
		switch {
		case len(r.KVs) > 0:
			kvs := make([]string, len(r.KVs))
			for i, kv := range r.KVs {
				kvs[i] = kv.String()
			}
			parts = append(parts, "["+strings.Join(kvs, " ")+"]")
		case r.Found:
			parts = append(parts, "found")
		}
	}
	return fmt.Sprintf("%v @%d %s", o.Succeeded, o.Index, strings.Join(parts, " "))
}
