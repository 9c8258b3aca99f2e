package main

import (
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata/chaos/history"
)

// bank is the transaction workload. Its accounts (bank/0, bank/1, ...)
// are opened in one transaction with bankOpening each, so their total is
// fixed. A transfer reads two accounts in one transaction (two gets: the
// balances and their mod indexes), then sends a transaction whose
// compares are those mod indexes and whose success branch puts both new
// balances (a random amount, at most what the source holds, moves); its
// failure branch reads both again. A failed compare is a lost race: the
// transfer starts over from that read, at most transferAttempts times.
// Every transfer transaction carries a request id of its own and is
// settled by it (settle). An audit reads every account in one
// transaction (a range); every account must be there, none negative, and
// the sum must be the total. All of it is in the history, where the
// model's transaction partition checks it (history.stepTxn); after
// healing, a last audit must find the total too (bankcheck.go).
type bank struct {
	accounts int
	total    int
	ids      atomic.Int64

	transfers, lostRaces, gaveUp, refused, unknown, settled, replayed atomic.Int64
	audits, wrongAudits                                               atomic.Int64

	mu       sync.Mutex
	problems []string
	final    map[string]int
}

// bankOpening is every account's opening balance; transferAttempts bounds
// a transfer's races.
const (
	bankOpening      = 100
	transferAttempts = 8
)

// bankStart and bankEnd bound the accounts' keys: [bank/, bank0).
const (
	bankStart = "bank/"
	bankEnd   = "bank0"
)

func accountKey(i int) string { return fmt.Sprintf("bank/%d", i) }

func newBank(accounts int) *bank {
	return &bank{accounts: accounts, total: accounts * bankOpening}
}

func gets(keys ...string) []history.TxnOp {
	ops := make([]history.TxnOp, len(keys))
	for i, k := range keys {
		ops[i] = history.TxnOp{Op: history.TxnGet, Key: k}
	}
	return ops
}

// auditOp is an audit: one range over every account.
func auditOp(c int) history.Op {
	return history.Op{Client: c, Kind: history.Txn,
		Txn: &history.TxnRequest{Success: []history.TxnOp{{Op: history.TxnRange, Start: bankStart, End: bankEnd}}}}
}

// open creates the accounts, each with bankOpening, in one transaction
// that requires none of them to exist. A refused attempt is made again
// (under a new id), up to 10 times.
func (b *bank) open(c int, kv kvStore, rec *history.Recorder) error {
	t := &history.TxnRequest{Failure: []history.TxnOp{{Op: history.TxnRange, Start: bankStart, End: bankEnd}}}
	for i := 0; i < b.accounts; i++ {
		t.Compares = append(t.Compares, history.Compare{Key: accountKey(i), Absent: true})
		t.Success = append(t.Success, history.TxnOp{Op: history.TxnPut, Key: accountKey(i), Value: strconv.Itoa(bankOpening)})
	}
	var op history.Op
	for attempt := 0; attempt < 10; attempt++ {
		op = history.Op{Client: c, Kind: history.Txn, Txn: t, RequestID: fmt.Sprintf("bank-open-%d", attempt)}
		settle(kv, rec, &op, kv.Txn)
		switch {
		case op.Result == history.Ok && op.Succeeded:
			return nil
		case op.Result == history.Ok:
			return fmt.Errorf("the accounts existed before they were opened")
		case op.Result == history.Unknown:
			return fmt.Errorf("opening the accounts: no answer settled it after %d sends (%s)", op.Attempts, op.Note)
		}
		time.Sleep(settleDelay)
	}
	return fmt.Errorf("opening the accounts was refused 10 times (%s)", op.Note)
}

// step is one bank operation of client c: an audit one time in four,
// else a transfer. False when the recorder is full.
func (b *bank) step(c int, rng *rand.Rand, kv kvStore, rec *history.Recorder) bool {
	if rng.Intn(4) == 0 {
		return b.audit(c, kv, rec)
	}
	return b.transfer(c, rng, kv, rec)
}

// audit reads every account and checks the balances (checkAudit).
func (b *bank) audit(c int, kv kvStore, rec *history.Recorder) bool {
	op := auditOp(c)
	recorded := issue(kv, rec, &op)
	if op.Result == history.Ok {
		b.audits.Add(1)
		if _, problem := b.checkAudit(op.Answer); problem != "" {
			b.wrong(fmt.Sprintf("audit by client %d via %s at index %d: %s", c, op.Via, answerIndex(op.Answer), problem))
		}
	}
	return recorded
}

// account is one account as a transaction read it.
type account struct {
	key     string
	value   string
	balance int
	mod     uint64
}

// readPair takes the two accounts a branch of two gets read; false when
// either is missing or not a balance (the model then finds the read
// illegal, or the audits a wrong balance).
func readPair(a *history.TxnAnswer, keys [2]string) ([2]account, bool) {
	var out [2]account
	if a == nil || len(a.Results) != 2 {
		return out, false
	}
	for i, r := range a.Results {
		if !r.Found || len(r.KVs) != 1 || r.KVs[0].Key != keys[i] {
			return out, false
		}
		n, err := strconv.Atoi(r.KVs[0].Value)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = account{key: keys[i], value: r.KVs[0].Value, balance: n, mod: r.KVs[0].ModIndex}
	}
	return out, true
}

// transfer moves a random amount between two random accounts: read both,
// then compare-and-put on their mod indexes, again from what a lost race
// read. False when the recorder is full.
func (b *bank) transfer(c int, rng *rand.Rand, kv kvStore, rec *history.Recorder) bool {
	p := rng.Perm(b.accounts)
	keys := [2]string{accountKey(p[0]), accountKey(p[1])}
	read := history.Op{Client: c, Kind: history.Txn, Txn: &history.TxnRequest{Success: gets(keys[0], keys[1])}}
	if !issue(kv, rec, &read) {
		return false
	}
	if read.Result != history.Ok {
		return true
	}
	cur, ok := readPair(read.Answer, keys)
	for attempt := 0; ok && attempt < transferAttempts; attempt++ {
		from, to := cur[0], cur[1]
		if from.balance == 0 {
			from, to = to, from
		}
		if from.balance == 0 {
			return true
		}
		amount := 1 + rng.Intn(from.balance)
		op := history.Op{Client: c, Kind: history.Txn, RequestID: fmt.Sprintf("bank-%d-%d", c, b.ids.Add(1)),
			Txn: &history.TxnRequest{
				Compares: []history.Compare{
					{Key: from.key, ModIndex: from.mod, Value: from.value},
					{Key: to.key, ModIndex: to.mod, Value: to.value},
				},
				Success: []history.TxnOp{
					{Op: history.TxnPut, Key: from.key, Value: strconv.Itoa(from.balance - amount)},
					{Op: history.TxnPut, Key: to.key, Value: strconv.Itoa(to.balance + amount)},
				},
				Failure: gets(keys[0], keys[1]),
			}}
		late, recorded := settle(kv, rec, &op, kv.Txn)
		if late {
			b.settled.Add(1)
		}
		if op.Replayed {
			b.replayed.Add(1)
		}
		if !recorded {
			return false
		}
		switch {
		case op.Result == history.Ok && op.Succeeded:
			b.transfers.Add(1)
			return true
		case op.Result == history.Ok:
			b.lostRaces.Add(1)
			cur, ok = readPair(op.Answer, keys)
		case op.Result == history.Unknown:
			b.unknown.Add(1)
			return true
		default:
			b.refused.Add(1)
			return true
		}
	}
	if ok {
		b.gaveUp.Add(1)
	}
	return true
}

func answerIndex(a *history.TxnAnswer) uint64 {
	if a == nil {
		return 0
	}
	return a.Index
}
