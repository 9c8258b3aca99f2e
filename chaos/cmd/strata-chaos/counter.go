package main

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/strata/chaos/history"
)

// counters is the double-application workload: each counter key holds a
// decimal number that clients increment by reading it and then swapping
// it for its successor (CAS), again from the value a lost CAS reports, at
// most 8 attempts. Every CAS carries a request id of its own; one whose
// answer is ambiguous is sent again with the same id until an answer
// settles it (`settleAttempts` sends at most), which the nodes give
// without applying it twice. An increment counts as acknowledged when its
// CAS succeeded and as ambiguous when no answer settled it. After
// healing, every counter must lie between its acknowledged increments and
// those plus the ambiguous ones: below is a lost acknowledged write, above
// is an increment applied twice, or applied although the answer said it
// was not (a refused CAS is resent; if the refused one took effect, the
// resend loses, the client reads on and increments again).
type counters struct {
	mu    sync.Mutex
	tally map[string]*counterTally
	// ids numbers the CASes, for their request ids.
	ids atomic.Int64
	// Settled counts the CASes an ambiguous answer was followed by a
	// settling one for; Unsettled those still ambiguous after every send.
	Settled, Unsettled atomic.Int64
}

// counterTally is what the clients know about one counter.
type counterTally struct {
	Acked     int `json:"acknowledged"`
	Ambiguous int `json:"ambiguous"`
	Final     int `json:"final"`
}

func newCounters() *counters { return &counters{tally: map[string]*counterTally{}} }

func counterKey(i int) string { return fmt.Sprintf("ctr/%d", i) }

func (cs *counters) note(key string, acked, ambiguous int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	t := cs.tally[key]
	if t == nil {
		t = &counterTally{}
		cs.tally[key] = t
	}
	t.Acked += acked
	t.Ambiguous += ambiguous
}

// increment adds one to the counter at key; false when the recorder is full.
func (cs *counters) increment(c int, kv kvStore, rec *history.Recorder, key string) bool {
	read := history.Op{Client: c, Kind: history.Get, Key: key}
	if !issue(kv, rec, &read) {
		return false
	}
	if read.Result != history.Ok {
		return true
	}
	cur, exists := read.Got, read.Found
	for attempt := 0; attempt < 8; attempt++ {
		n, err := strconv.Atoi(cur)
		if exists && err != nil {
			// The checks after healing report a counter that is not a number.
			return true
		}
		if !exists {
			n = 0
		}
		op := history.Op{Client: c, Kind: history.Cas, Key: key, Expected: cur, ExpectedAbsent: !exists,
			Value: strconv.Itoa(n + 1), RequestID: fmt.Sprintf("ctr-%d-%d", c, cs.ids.Add(1))}
		if !cs.settle(kv, rec, &op) {
			return false
		}
		switch {
		case op.Result == history.Ok && op.Succeeded:
			cs.note(key, 1, 0)
			return true
		case op.Result == history.Ok:
			cur, exists = op.Got, op.Found
		case op.Result == history.Unknown:
			cs.note(key, 0, 1)
			return true
		default:
			// Refused every time it was sent: nothing was applied.
			return true
		}
	}
	return true
}

// settle sends op (a CAS with a request id) until an answer settles it
// (see settle) and counts it as settled late or unsettled. False when the
// recorder is full.
func (cs *counters) settle(kv kvStore, rec *history.Recorder, op *history.Op) bool {
	late, ok := settle(kv, rec, op, kv.Cas)
	switch {
	case late:
		cs.Settled.Add(1)
	case op.Result == history.Unknown:
		cs.Unsettled.Add(1)
	}
	return ok
}

// check compares each counter's final linearizable read with its tally and
// returns the violations and how many increments were applied more often
// than acknowledged and ambiguous ones allow (duplicates).
func (cs *counters) check(final map[string]history.Op) (violations []string, duplicates int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var keys []string
	for k := range cs.tally {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t := cs.tally[k]
		f, ok := final[k]
		if !ok {
			violations = append(violations, fmt.Sprintf("%s: no final read succeeded", k))
			continue
		}
		n := 0
		if f.Found {
			var err error
			if n, err = strconv.Atoi(f.Got); err != nil {
				violations = append(violations, fmt.Sprintf("%s: final value %q is not a number", k, truncate(f.Got, 40)))
				continue
			}
		}
		t.Final = n
		switch {
		case n < t.Acked:
			violations = append(violations, fmt.Sprintf("%s: counter is %d but %d increments were acknowledged (%d lost)",
				k, n, t.Acked, t.Acked-n))
		case n > t.Acked+t.Ambiguous:
			d := n - t.Acked - t.Ambiguous
			duplicates += d
			violations = append(violations, fmt.Sprintf("%s: DUPLICATE: counter is %d but only %d increments were acknowledged and %d ambiguous (%d applied twice, or applied though refused)",
				k, n, t.Acked, t.Ambiguous, d))
		}
	}
	return violations, duplicates
}

// snapshot returns a copy of the tallies for result.json.
func (cs *counters) snapshot() map[string]counterTally {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := map[string]counterTally{}
	for k, t := range cs.tally {
		out[k] = *t
	}
	return out
}
