package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/strata/chaos/history"
)

// checkAudit checks what an audit's range read: every account, in key
// order, nothing else and nothing left out, no balance negative, and the
// balances summing to the total (transfers move money, none makes or
// loses any). It returns the balances, and what is wrong ("" when
// nothing).
func (b *bank) checkAudit(a *history.TxnAnswer) (map[string]int, string) {
	if a == nil || len(a.Results) != 1 {
		return nil, "the answer has no range result"
	}
	r := a.Results[0]
	if r.More {
		return nil, "the range left accounts out (more)"
	}
	balances := map[string]int{}
	sum := 0
	for i, kv := range r.KVs {
		switch {
		case i >= b.accounts:
			return nil, fmt.Sprintf("read %s, which is not an account", kv.Key)
		case kv.Key != accountKey(i):
			return nil, fmt.Sprintf("read %s where %s was due", kv.Key, accountKey(i))
		}
		n, err := strconv.Atoi(kv.Value)
		if err != nil || n < 0 {
			return nil, fmt.Sprintf("%s holds %q, not a balance", kv.Key, truncate(kv.Value, 40))
		}
		balances[kv.Key] = n
		sum += n
	}
	switch {
	case len(r.KVs) != b.accounts:
		return balances, fmt.Sprintf("read %d accounts of %d: %v", len(r.KVs), b.accounts, balances)
	case sum != b.total:
		return balances, fmt.Sprintf("balances %v sum to %d, not %d", balances, sum, b.total)
	}
	return balances, ""
}

// wrong notes a wrong audit; the first five are kept for the report.
func (b *bank) wrong(problem string) {
	b.wrongAudits.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) < 5 {
		b.problems = append(b.problems, problem)
	}
}

// finish audits the accounts once more after healing (through kv, as
// client c, into the history, at most 20 tries) and returns the
// violations: wrong audits during the run, a wrong final audit, and
// final balances that differ from the nodes' converged state (nil when
// they did not converge).
func (b *bank) finish(c int, kv kvStore, rec *history.Recorder, state map[string]string) []string {
	var op history.Op
	for attempt := 0; attempt < 20; attempt++ {
		op = auditOp(c)
		issue(kv, rec, &op)
		if op.Result == history.Ok {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	var v []string
	if op.Result != history.Ok {
		v = append(v, "bank: no final audit succeeded: "+op.Note)
	} else {
		b.audits.Add(1)
		balances, problem := b.checkAudit(op.Answer)
		b.mu.Lock()
		b.final = balances
		b.mu.Unlock()
		if problem != "" {
			b.wrongAudits.Add(1)
			v = append(v, "bank: final audit after healing: "+problem)
		}
		for i := 0; i < b.accounts && state != nil && balances != nil; i++ {
			k := accountKey(i)
			got, ok := state[k]
			if n, found := balances[k]; ok != found || (ok && got != strconv.Itoa(n)) {
				v = append(v, fmt.Sprintf("bank: %s: final audit read %d (found %v), the converged state holds %q (found %v)",
					k, n, found, got, ok))
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		v = append(v, "bank: "+p)
	}
	if n := b.wrongAudits.Load(); n > 5 {
		v = append(v, fmt.Sprintf("bank: %d wrong audits in all", n))
	}
	return v
}

// bankReport is what the bank workload did, for result.json.
type bankReport struct {
	Accounts int `json:"accounts"`
	Total    int `json:"total"`
	// Transfers were acknowledged (compares held, both balances put);
	// LostRaces are answers whose compares failed, each followed by
	// another try from the failure branch's read; GaveUp transfers lost
	// every try; Refused were answered "not applied"; Unknown are
	// transfers no send settled; Settled got an ambiguous answer and,
	// sent again under their request id, a settling one; Replayed of
	// those answers were the group's remembered first answer.
	Transfers int64 `json:"transfers"`
	LostRaces int64 `json:"lost_races"`
	GaveUp    int64 `json:"gave_up"`
	Refused   int64 `json:"refused"`
	Unknown   int64 `json:"unknown"`
	Settled   int64 `json:"settled"`
	Replayed  int64 `json:"replayed"`
	// Audits counts the audits whose balances were checked (the final
	// one included); WrongAudits those whose balances were wrong.
	Audits      int64          `json:"audits"`
	WrongAudits int64          `json:"wrong_audits"`
	Final       map[string]int `json:"final"`
	FinalSum    int            `json:"final_sum"`
}

func (b *bank) report() *bankReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := &bankReport{Accounts: b.accounts, Total: b.total, Transfers: b.transfers.Load(), LostRaces: b.lostRaces.Load(),
		GaveUp: b.gaveUp.Load(), Refused: b.refused.Load(), Unknown: b.unknown.Load(), Settled: b.settled.Load(),
		Replayed: b.replayed.Load(), Audits: b.audits.Load(), WrongAudits: b.wrongAudits.Load(), Final: b.final}
	for _, n := range b.final {
		r.FinalSum += n
	}
	return r
}

func (r *bankReport) String() string {
	if r == nil {
		return "off"
	}
	return fmt.Sprintf("%d transfers, %d lost races (%d gave up), %d refused, %d unknown, %d settled by request id (%d replayed), %d audits checked (%d wrong), final sum %d of %d",
		r.Transfers, r.LostRaces, r.GaveUp, r.Refused, r.Unknown, r.Settled, r.Replayed, r.Audits, r.WrongAudits, r.FinalSum, r.Total)
}
