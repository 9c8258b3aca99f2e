package history

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// ops builds a history from (client, kind, key, value, call, return, result,
// found, got) rows in order.
func put(c int, key, v string, call, ret int64, res Outcome) Op {
	return Op{Client: c, Kind: Put, Key: key, Value: v, Call: call, Return: ret, Result: res}
}

func get(c int, key string, found bool, got string, call, ret int64) Op {
	return Op{Client: c, Kind: Get, Key: key, Found: found, Got: got, Call: call, Return: ret, Result: Ok}
}

func check(t *testing.T, ops []Op) porcupine.CheckResult {
	t.Helper()
	res, err := CheckLinearizable(ops, 10*time.Second, filepath.Join(t.TempDir(), "h.html"))
	if err != nil {
		t.Fatal(err)
	}
	return res.Verdict
}

// A read that returns a value overwritten before the read began is a stale
// read: the checker must reject it.
func TestStaleReadIsNotLinearizable(t *testing.T) {
	h := []Op{
		put(0, "k", "a", 0, 10, Ok),
		put(0, "k", "b", 20, 30, Ok),
		get(1, "k", true, "a", 40, 50),
	}
	if v := check(t, h); v != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal", v)
	}
}

// An acknowledged write that a later read does not see is a lost write.
func TestLostAcknowledgedWriteIsNotLinearizable(t *testing.T) {
	h := []Op{
		put(0, "k", "a", 0, 10, Ok),
		get(1, "k", false, "", 20, 30),
	}
	if v := check(t, h); v != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal", v)
	}
}

// Concurrent operations may be ordered either way.
func TestConcurrentReadMaySeeEitherValue(t *testing.T) {
	for _, seen := range []string{"a", "b"} {
		h := []Op{
			put(0, "k", "a", 0, 10, Ok),
			put(1, "k", "b", 20, 60, Ok),
			get(2, "k", true, seen, 30, 40),
		}
		if v := check(t, h); v != porcupine.Ok {
			t.Fatalf("seen %q: verdict %v, want Ok", seen, v)
		}
	}
}

// An ambiguous write may take effect long after the client gave up, or
// never: both histories are linearizable.
func TestAmbiguousWriteMayApplyLateOrNever(t *testing.T) {
	amb := put(0, "k", "x", 0, 5, Unknown)
	late := []Op{amb, get(1, "k", false, "", 10, 20), get(1, "k", true, "x", 30, 40)}
	if v := check(t, late); v != porcupine.Ok {
		t.Fatalf("late apply: verdict %v, want Ok", v)
	}
	never := []Op{amb, get(1, "k", false, "", 10, 20)}
	if v := check(t, never); v != porcupine.Ok {
		t.Fatalf("never applied: verdict %v, want Ok", v)
	}
	// But once seen, it cannot disappear again.
	flip := []Op{amb, get(1, "k", true, "x", 10, 20), get(1, "k", false, "", 30, 40)}
	if v := check(t, flip); v != porcupine.Illegal {
		t.Fatalf("flip: verdict %v, want Illegal", v)
	}
}

// A write that definitely failed (503) must not be observed: if it is, the
// node broke the "503 means not applied" contract.
func TestFailedWriteIsNotAllowedToAppear(t *testing.T) {
	h := []Op{put(0, "k", "x", 0, 5, Failed), get(1, "k", true, "x", 10, 20)}
	if v := check(t, h); v != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal", v)
	}
}

// CAS: two clients both succeeding from the same expected value is a
// violation (a lost update); a failed CAS must report the current value.
func TestCasModel(t *testing.T) {
	cas := func(c int, exp, v string, ok bool, was string, call, ret int64) Op {
		return Op{Client: c, Kind: Cas, Key: "k", Expected: exp, Value: v, Succeeded: ok,
			Found: true, Got: was, Call: call, Return: ret, Result: Ok}
	}
	both := []Op{
		put(0, "k", "1", 0, 5, Ok),
		cas(1, "1", "2", true, "1", 10, 20),
		cas(2, "1", "3", true, "1", 30, 40),
	}
	if v := check(t, both); v != porcupine.Illegal {
		t.Fatalf("double success: verdict %v, want Illegal", v)
	}
	good := []Op{
		put(0, "k", "1", 0, 5, Ok),
		cas(1, "1", "2", true, "1", 10, 20),
		cas(2, "1", "3", false, "2", 30, 40),
		get(0, "k", true, "2", 50, 60),
	}
	if v := check(t, good); v != porcupine.Ok {
		t.Fatalf("good: verdict %v, want Ok", v)
	}
	absent := []Op{{Client: 0, Kind: Cas, Key: "k", ExpectedAbsent: true, Value: "1", Succeeded: true,
		Call: 0, Return: 5, Result: Ok}, get(1, "k", true, "1", 10, 20)}
	if v := check(t, absent); v != porcupine.Ok {
		t.Fatalf("create: verdict %v, want Ok", v)
	}
}

// The visualization of a failing history is written.
func TestIllegalHistoryWritesVisualization(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.html")
	h := []Op{put(0, "k", "a", 0, 10, Ok), get(1, "k", false, "", 20, 30)}
	res, err := CheckLinearizable(h, time.Second, path)
	if err != nil || res.Verdict != porcupine.Illegal {
		t.Fatalf("res %+v err %v", res, err)
	}
	if _, err := Load(path); err == nil {
		t.Fatal("visualization should be HTML, not a JSON history")
	}
}

// The bank's transactions on two accounts a and b, opened with 10 each at
// raft index 1.

func txnOp(c int, t *TxnRequest, call, ret int64, res Outcome, ok bool, a *TxnAnswer) Op {
	return Op{Client: c, Kind: Txn, Txn: t, Call: call, Return: ret, Result: res, Succeeded: ok, Answer: a}
}

func openAccounts(call, ret int64) Op {
	t := &TxnRequest{
		Compares: []Compare{{Key: "a", Absent: true}, {Key: "b", Absent: true}},
		Success:  []TxnOp{{Op: TxnPut, Key: "a", Value: "10"}, {Op: TxnPut, Key: "b", Value: "10"}},
		Failure:  []TxnOp{{Op: TxnRange, Start: "a", End: "c"}},
	}
	return txnOp(9, t, call, ret, Ok, true, &TxnAnswer{Index: 1, Results: []TxnResult{{}, {}}})
}

// transfer sets a and b to na and nb if their mod indexes are still ma and
// mb (where the client read va and vb); a failure reads both.
func transfer(c int, ma uint64, va string, mb uint64, vb string, na, nb string) *TxnRequest {
	return &TxnRequest{
		Compares: []Compare{{Key: "a", ModIndex: ma, Value: va}, {Key: "b", ModIndex: mb, Value: vb}},
		Success:  []TxnOp{{Op: TxnPut, Key: "a", Value: na}, {Op: TxnPut, Key: "b", Value: nb}},
		Failure:  []TxnOp{{Op: TxnGet, Key: "a"}, {Op: TxnGet, Key: "b"}},
	}
}

func applied(index uint64) *TxnAnswer { return &TxnAnswer{Index: index, Results: []TxnResult{{}, {}}} }

// lost is the answer of a transfer whose compares failed: the failure
// branch's reads of a and b.
func lost(index uint64, a, b KeyValue) *TxnAnswer {
	return &TxnAnswer{Index: index, Results: []TxnResult{{Found: true, KVs: []KeyValue{a}}, {Found: true, KVs: []KeyValue{b}}}}
}

// audit reads every account in one range; it saw kvs.
func audit(c int, call, ret int64, index uint64, kvs ...KeyValue) Op {
	t := &TxnRequest{Success: []TxnOp{{Op: TxnRange, Start: "a", End: "c"}}}
	return txnOp(c, t, call, ret, Ok, true, &TxnAnswer{Index: index, Results: []TxnResult{{KVs: kvs}}})
}

func kv(key, value string, create, mod uint64) KeyValue {
	return KeyValue{Key: key, Value: value, CreateIndex: create, ModIndex: mod}
}

// A transfer, a transfer that lost the race to it (and read what the
// first one wrote) and an audit of the result are linearizable.
func TestTxnModel_transferLostRaceAndAudit(t *testing.T) {
	h := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		txnOp(2, transfer(2, 1, "10", 1, "10", "5", "15"), 12, 30, Ok, false, lost(6, kv("a", "7", 1, 5), kv("b", "13", 1, 5))),
		audit(3, 40, 50, 7, kv("a", "7", 1, 5), kv("b", "13", 1, 5)),
	}
	if v := check(t, h); v != porcupine.Ok {
		t.Fatalf("verdict %v, want Ok", v)
	}
}

// An audit that sees half of a transfer (a debited, b not credited: a sum
// of 17) matches no order of the operations.
func TestTxnModel_auditSeeingHalfATransferIsIllegal(t *testing.T) {
	h := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		audit(3, 12, 18, 5, kv("a", "7", 1, 5), kv("b", "10", 1, 1)),
	}
	if v := check(t, h); v != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal", v)
	}
}

// Two transfers from the same read both succeeding is a transfer applied
// on a stale state (money made: 7 + 13 debited and credited twice); a
// transfer whose effect an audit sees twice is applied twice.
func TestTxnModel_transferAppliedTwiceIsIllegal(t *testing.T) {
	both := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		txnOp(2, transfer(2, 1, "10", 1, "10", "5", "15"), 30, 40, Ok, true, applied(6)),
	}
	if v := check(t, both); v != porcupine.Illegal {
		t.Fatalf("double success: verdict %v, want Illegal", v)
	}
	twice := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		audit(3, 30, 40, 8, kv("a", "4", 1, 8), kv("b", "16", 1, 8)),
	}
	if v := check(t, twice); v != porcupine.Illegal {
		t.Fatalf("applied twice: verdict %v, want Illegal", v)
	}
}

// A transfer and its reverse restore both values but not the mod indexes:
// a transfer that compares the indexes read before them must fail, though
// the values still match (a model on values alone would reject the
// failure), and must not succeed.
func TestTxnModel_modIndexNotValueDecidesTheCompare(t *testing.T) {
	base := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		txnOp(1, transfer(1, 5, "7", 5, "13", "10", "10"), 30, 40, Ok, true, applied(7)),
	}
	stale := transfer(2, 1, "10", 1, "10", "8", "12")
	failed := append(append([]Op{}, base...),
		txnOp(2, stale, 50, 60, Ok, false, lost(8, kv("a", "10", 1, 7), kv("b", "10", 1, 7))))
	if v := check(t, failed); v != porcupine.Ok {
		t.Fatalf("ABA refused: verdict %v, want Ok", v)
	}
	succeeded := append(append([]Op{}, base...), txnOp(2, stale, 50, 60, Ok, true, applied(8)))
	if v := check(t, succeeded); v != porcupine.Illegal {
		t.Fatalf("ABA applied: verdict %v, want Illegal", v)
	}
}

// A read must report the index the transfer's answer gave its puts.
func TestTxnModel_wrongModIndexIsIllegal(t *testing.T) {
	h := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		audit(3, 30, 40, 6, kv("a", "7", 1, 4), kv("b", "13", 1, 5)),
	}
	if v := check(t, h); v != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal", v)
	}
}

// An ambiguous transfer may apply late or never; once an audit saw it, it
// cannot disappear; the index a read reports for it is then the one a
// later transfer compares with.
func TestTxnModel_ambiguousTransfer(t *testing.T) {
	amb := txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 15, Unknown, false, nil)
	opened := audit(3, 20, 30, 4, kv("a", "10", 1, 1), kv("b", "10", 1, 1))
	seen := audit(3, 40, 50, 9, kv("a", "7", 1, 6), kv("b", "13", 1, 6))
	next := txnOp(2, transfer(2, 6, "7", 6, "13", "0", "20"), 60, 70, Ok, true, applied(10))
	late := []Op{openAccounts(0, 5), amb, opened, seen, next,
		audit(3, 80, 90, 11, kv("a", "0", 1, 10), kv("b", "20", 1, 10))}
	if v := check(t, late); v != porcupine.Ok {
		t.Fatalf("late apply: verdict %v, want Ok", v)
	}
	never := []Op{openAccounts(0, 5), amb, opened, audit(3, 40, 50, 9, kv("a", "10", 1, 1), kv("b", "10", 1, 1))}
	if v := check(t, never); v != porcupine.Ok {
		t.Fatalf("never applied: verdict %v, want Ok", v)
	}
	flip := []Op{openAccounts(0, 5), amb, seen, audit(3, 60, 70, 12, kv("a", "10", 1, 1), kv("b", "10", 1, 1))}
	if v := check(t, flip); v != porcupine.Illegal {
		t.Fatalf("flip: verdict %v, want Illegal", v)
	}
	// The index the audit read (6) is the transfer's; a transfer that
	// compares another and succeeds is applied on a state it did not see.
	wrong := []Op{openAccounts(0, 5), amb, seen, txnOp(2, transfer(2, 5, "7", 5, "13", "0", "20"), 60, 70, Ok, true, applied(10))}
	if v := check(t, wrong); v != porcupine.Illegal {
		t.Fatalf("wrong index: verdict %v, want Illegal", v)
	}
}

// A transfer answered "not applied" (503) must not be seen by an audit.
func TestTxnModel_refusedTransferIsNotAllowedToAppear(t *testing.T) {
	h := []Op{
		openAccounts(0, 5),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Failed, false, nil),
		audit(3, 30, 40, 6, kv("a", "7", 1, 6), kv("b", "13", 1, 6)),
	}
	if v := check(t, h); v != porcupine.Illegal {
		t.Fatalf("verdict %v, want Illegal", v)
	}
}

// Transactions and register operations are checked side by side, each in
// its own partition, and a saved history with transactions loads back and
// checks the same.
func TestTxnModel_withRegistersAndRoundTrip(t *testing.T) {
	h := []Op{
		openAccounts(0, 5),
		put(0, "k", "x", 1, 4, Ok),
		txnOp(1, transfer(1, 1, "10", 1, "10", "7", "13"), 10, 20, Ok, true, applied(5)),
		get(0, "k", true, "x", 21, 22),
		audit(3, 40, 50, 7, kv("a", "7", 1, 5), kv("b", "13", 1, 5)),
	}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := Save(path, h); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := check(t, back); v != porcupine.Ok {
		t.Fatalf("verdict %v, want Ok", v)
	}
	back[4].Answer.Results[0].KVs[1].Value = "10"
	if v := check(t, back); v != porcupine.Illegal {
		t.Fatalf("altered: verdict %v, want Illegal", v)
	}
}
