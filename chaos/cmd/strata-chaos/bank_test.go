package main

import (
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/strata/chaos/history"
)

// txnStore is a sequential in-memory store with transactions as the node
// runs them: compares on existence and mod index, puts at the entry's
// index, gets and ranges, request ids answered once and replayed after.
// Every ambiguousEvery-th transaction with a request id is applied but
// answered "unknown"; halfTransfers applies only the first put of a
// branch (a transaction that is not atomic).
type txnStore struct {
	mu             sync.Mutex
	index          uint64
	kvs            map[string]history.KeyValue
	answers        map[string]history.Op
	sent           int
	ambiguousEvery int
	halfTransfers  bool
}

func newTxnStore() *txnStore {
	return &txnStore{kvs: map[string]history.KeyValue{}, answers: map[string]history.Op{}}
}

func (s *txnStore) Kind() string           { return "mem" }
func (s *txnStore) Get(op *history.Op)     { op.Result = history.Failed }
func (s *txnStore) Put(op *history.Op)     { op.Result = history.Failed }
func (s *txnStore) Cas(op *history.Op)     { op.Result = history.Failed }
func (s *txnStore) Batch(ops []history.Op) {}

func (s *txnStore) Txn(op *history.Op) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.answers[op.RequestID]; ok && op.RequestID != "" {
		op.Result, op.Succeeded, op.Answer, op.Replayed = history.Ok, prev.Succeeded, prev.Answer, true
		return
	}
	s.index++
	ok := true
	for _, c := range op.Txn.Compares {
		kv, exists := s.kvs[c.Key]
		if (c.Absent && exists) || (!c.Absent && (!exists || kv.ModIndex != c.ModIndex)) {
			ok = false
		}
	}
	branch := op.Txn.Failure
	if ok {
		branch = op.Txn.Success
	}
	a := &history.TxnAnswer{Index: s.index}
	puts := 0
	for _, t := range branch {
		var r history.TxnResult
		switch t.Op {
		case history.TxnPut:
			if puts++; s.halfTransfers && puts > 1 {
				break
			}
			kv := history.KeyValue{Key: t.Key, Value: t.Value, CreateIndex: s.index, ModIndex: s.index}
			if old, exists := s.kvs[t.Key]; exists {
				kv.CreateIndex = old.CreateIndex
			}
			s.kvs[t.Key] = kv
		case history.TxnGet:
			kv, found := s.kvs[t.Key]
			if r.Found = found; found {
				r.KVs = []history.KeyValue{kv}
			}
		case history.TxnRange:
			var keys []string
			for k := range s.kvs {
				if k >= t.Start && k < t.End {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				r.KVs = append(r.KVs, s.kvs[k])
			}
		}
		a.Results = append(a.Results, r)
	}
	op.Result, op.Succeeded, op.Answer = history.Ok, ok, a
	if op.RequestID != "" {
		s.answers[op.RequestID] = *op
		if s.sent++; s.ambiguousEvery > 0 && s.sent%s.ambiguousEvery == 0 {
			op.Result, op.Answer, op.Succeeded = history.Unknown, nil, false
		}
	}
}

// runBank opens the accounts of b in s and runs clients × steps bank
// operations, then the final audit; it returns the final violations and
// the history's verdict.
func runBank(t *testing.T, s *txnStore, b *bank, clients, steps int) ([]string, porcupine.CheckResult) {
	t.Helper()
	rec := history.NewRecorder(100000)
	if err := b.open(clients, s, rec); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			for i := 0; i < steps; i++ {
				b.step(c, rng, s, rec)
			}
		}(c)
	}
	wg.Wait()
	state := map[string]string{}
	for k, kv := range s.kvs {
		state[k] = kv.Value
	}
	v := b.finish(clients, s, rec, state)
	res, err := history.CheckLinearizable(rec.Ops(), 30*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	return v, res.Verdict
}

// Against a store that runs transactions atomically and applies a request
// id once, every audit sums to the total, the history is linearizable,
// and ambiguous transfers are settled by replay.
func TestBankWorkload_correctStoreKeepsTheTotal(t *testing.T) {
	s := newTxnStore()
	s.ambiguousEvery = 40
	b := newBank(4)
	v, verdict := runBank(t, s, b, 4, 60)
	r := b.report()
	if len(v) != 0 || verdict != porcupine.Ok {
		t.Fatalf("violations %v, verdict %v", v, verdict)
	}
	if r.Transfers == 0 || r.Audits < 2 || r.Settled == 0 || r.Replayed != r.Settled || r.Unknown != 0 || r.FinalSum != r.Total {
		t.Fatalf("report %s", r)
	}
}

// A store that applies only the first put of a transfer loses or makes
// money: the audits, the final audit and the model all say so.
func TestBankWorkload_halfAppliedTransferIsCaught(t *testing.T) {
	s, b := newTxnStore(), newBank(4)
	rec := history.NewRecorder(1000)
	if err := b.open(0, s, rec); err != nil {
		t.Fatal(err)
	}
	// The accounts are opened whole; only the transfers after it are half.
	s.halfTransfers = true
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		b.step(0, rng, s, rec)
	}
	v := b.finish(1, s, rec, nil)
	res, err := history.CheckLinearizable(rec.Ops(), 10*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != porcupine.Illegal || !strings.Contains(strings.Join(v, "\n"), "final audit after healing: balances") {
		t.Fatalf("violations %v, verdict %v", v, res.Verdict)
	}
}

// An audit must list every account once, in order, with balances that are
// not negative and sum to the total.
func TestBankCheckAudit(t *testing.T) {
	b := newBank(2)
	kvs := func(pairs ...string) *history.TxnAnswer {
		var r history.TxnResult
		for i := 0; i < len(pairs); i += 2 {
			r.KVs = append(r.KVs, history.KeyValue{Key: pairs[i], Value: pairs[i+1]})
		}
		return &history.TxnAnswer{Results: []history.TxnResult{r}}
	}
	cases := []struct {
		answer *history.TxnAnswer
		want   string
	}{
		{kvs("bank/0", "150", "bank/1", "50"), ""},
		{kvs("bank/0", "150", "bank/1", "51"), "sum to 201, not 200"},
		{kvs("bank/0", "200"), "read 1 accounts of 2"},
		{kvs("bank/1", "100", "bank/0", "100"), "read bank/1 where bank/0 was due"},
		{kvs("bank/0", "250", "bank/1", "-50"), "not a balance"},
		{kvs("bank/0", "100", "bank/1", "100", "bank/2", "0"), "read bank/2, which is not an account"},
		{&history.TxnAnswer{Results: []history.TxnResult{{More: true}}}, "left accounts out"},
		{nil, "no range result"},
	}
	for _, c := range cases {
		_, got := b.checkAudit(c.answer)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.answer, got, c.want)
		}
	}
}
