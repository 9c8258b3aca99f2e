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
