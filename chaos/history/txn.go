package history

import (
	"fmt"
	"strings"
)

// TxnRequest is what a transaction (an Op of Kind Txn) asked: when every
// compare holds, Success runs, else Failure; each branch's operations run
// in order, all in one raft entry. It is not changed after the op is
// first sent: every send of the op carries the same request. The model
// (stepTxn) takes a Failure branch that only reads, as the bank's are.
type TxnRequest struct {
	Compares []Compare `json:"compares,omitempty"`
	Success  []TxnOp   `json:"success,omitempty"`
	Failure  []TxnOp   `json:"failure,omitempty"`
}

// Compare is one condition of a transaction: Key does not exist (Absent),
// or its mod index equals ModIndex. Value is what the client read at
// that mod index; it is not sent (the node compares indexes only), but
// lets the model judge the compare when the index of the key's last
// write is unknown to it (see stepTxn).
type Compare struct {
	Key      string `json:"key"`
	Absent   bool   `json:"absent,omitempty"`
	ModIndex uint64 `json:"mod_index,omitempty"`
	Value    string `json:"value,omitempty"`
}

// Operations of a transaction's branch.
const (
	TxnPut   = "put"
	TxnGet   = "get"
	TxnRange = "range"
)

// TxnOp is one operation of a branch: a put of Value under Key, a get of
// Key, or a range over [Start, End) (End empty: to the end) without limit.
type TxnOp struct {
	Op    string `json:"op"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
}

// TxnAnswer is what a transaction's answer said besides which branch ran
// (Op.Succeeded): the raft index it was applied at, which is the create
// and mod index its puts gave their keys, and one result per operation of
// the branch that ran.
type TxnAnswer struct {
	Index   uint64      `json:"index"`
	Results []TxnResult `json:"results,omitempty"`
}

// TxnResult is one operation's result: a get's Found and, when found, its
// pair in KVs; a range's pairs in key order and More (keys left out); a
// put's is empty.
type TxnResult struct {
	Found bool       `json:"found,omitempty"`
	KVs   []KeyValue `json:"kvs,omitempty"`
	More  bool       `json:"more,omitempty"`
}

// KeyValue is a pair as a transaction read it, with the raft indexes of
// the write that created the key and of the one that last put it.
type KeyValue struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	CreateIndex uint64 `json:"create_index"`
	ModIndex    uint64 `json:"mod_index"`
}

// ReadOnly says whether no branch of t writes: such a transaction with an
// ambiguous outcome had no effect and is left out of the check, like an
// ambiguous get.
func (t *TxnRequest) ReadOnly() bool {
	for _, b := range [][]TxnOp{t.Success, t.Failure} {
		for _, op := range b {
			if op.Op == TxnPut {
				return false
			}
		}
	}
	return true
}

func (t *TxnRequest) String() string {
	var b strings.Builder
	b.WriteString("txn(")
	if len(t.Compares) > 0 {
		b.WriteString("if")
		for _, c := range t.Compares {
			if c.Absent {
				fmt.Fprintf(&b, " %s absent", c.Key)
			} else {
				fmt.Fprintf(&b, " %s@%d(%q)", c.Key, c.ModIndex, c.Value)
			}
		}
		b.WriteString(" then ")
	}
	b.WriteString(branchString(t.Success))
	if len(t.Failure) > 0 {
		b.WriteString(" else " + branchString(t.Failure))
	}
	b.WriteString(")")
	return b.String()
}

func branchString(ops []TxnOp) string {
	var parts []string
	for _, op := range ops {
		switch op.Op {
		case TxnPut:
			parts = append(parts, fmt.Sprintf("put(%s, %q)", op.Key, op.Value))
		case TxnGet:
			parts = append(parts, fmt.Sprintf("get(%s)", op.Key))
		default:
			parts = append(parts, fmt.Sprintf("%s(%s, %s)", op.Op, op.Start, op.End))
		}
	}
	return strings.Join(parts, " ")
}

func (kv KeyValue) String() string {
	return fmt.Sprintf("%s=%q c%d m%d", kv.Key, kv.Value, kv.CreateIndex, kv.ModIndex)
}
