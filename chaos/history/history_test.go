package history

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Concurrent clients can record at once; the limit stops recording; a saved
// history loads back equal.
func TestRecorderConcurrentLimitAndRoundTrip(t *testing.T) {
	r := NewRecorder(50)
	var wg sync.WaitGroup
	refused := make(chan int, 8)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			n := 0
			for i := 0; i < 10; i++ {
				call := r.Now()
				if !r.Add(Op{Client: c, Kind: Put, Key: "k", Value: "v", Call: call, Return: r.Now(), Result: Ok}) {
					n++
				}
			}
			refused <- n
		}(c)
	}
	wg.Wait()
	close(refused)
	total := 0
	for n := range refused {
		total += n
	}
	ops := r.Ops()
	if len(ops) != 50 || total != 30 {
		t.Fatalf("kept %d refused %d, want 50 and 30", len(ops), total)
	}
	for _, op := range ops {
		if op.Return < op.Call {
			t.Fatalf("return before call: %+v", op)
		}
	}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := Save(path, ops); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil || len(back) != len(ops) || back[7] != ops[7] {
		t.Fatalf("round trip: %v, %d ops", err, len(back))
	}
	if c := Counts(ops); c[Ok] != 50 {
		t.Fatalf("counts %v", c)
	}
}

// Long values are recorded by length and digest: equal values stay equal,
// different ones of the same length differ, short ones are kept as they are.
func TestCompactValue_keepsEqualityOfLongValues(t *testing.T) {
	a := strings.Repeat("a", 1<<20)
	b := strings.Repeat("a", 1<<20-1) + "b"
	if CompactValue(a) != CompactValue(strings.Clone(a)) || CompactValue(a) == CompactValue(b) {
		t.Errorf("compacted %q and %q", CompactValue(a), CompactValue(b))
	}
	if len(CompactValue(a)) > 64 || CompactValue("1.2") != "1.2" {
		t.Errorf("compacted %q, %q", CompactValue(a), CompactValue("1.2"))
	}
}
