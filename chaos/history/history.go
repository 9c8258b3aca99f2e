// Package history records what concurrent clients did to a key-value store
// (each operation with its invoke and complete times and its outcome) and
// checks the record: linearizability with Porcupine, and that nothing
// acknowledged was lost.
package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Kind is what an operation does.
type Kind string

// The operations the workloads issue.
const (
	Get Kind = "get"
	Put Kind = "put"
	Cas Kind = "cas"
	// Txn is a transaction (Op.Txn, answered in Op.Succeeded and
	// Op.Answer).
	Txn Kind = "txn"
)

// Outcome says whether an operation took effect.
type Outcome string

// Outcomes. Unknown is an ambiguous outcome (a timeout, 504): the operation
// may or may not have taken effect, possibly after the client gave up.
// Failed means definitely not applied (503 from the node, 4xx): such an
// operation is left out of the check.
const (
	Ok      Outcome = "ok"
	Failed  Outcome = "failed"
	Unknown Outcome = "unknown"
)

// Op is one operation of one client.
type Op struct {
	Client int    `json:"client"`
	Kind   Kind   `json:"kind"`
	Key    string `json:"key"`
	// Value is what a put or a CAS writes.
	Value string `json:"value,omitempty"`
	// Expected is what a CAS compares with; ExpectedAbsent means "must not exist".
	Expected       string `json:"expected,omitempty"`
	ExpectedAbsent bool   `json:"expected_absent,omitempty"`
	// Call and Return are nanoseconds since the recorder started.
	Call   int64   `json:"call"`
	Return int64   `json:"return"`
	Result Outcome `json:"result"`
	// Found and Got are what a get read, or (for a CAS) the value before it.
	Found     bool   `json:"found,omitempty"`
	Got       string `json:"got,omitempty"`
	Succeeded bool   `json:"succeeded,omitempty"`
	// Note keeps the error text of a failed or ambiguous operation.
	Note string `json:"note,omitempty"`
	// Node is the node that answered (x-strata-node), when known.
	Node string `json:"node,omitempty"`
	// Via is the front end the client used: "rest" or "grpc".
	Via string `json:"via,omitempty"`
	// Batch numbers the atomic batch a put belonged to (0: none). A batch
	// is recorded as one put per key, all with the batch's call and return
	// times and outcome: on each key it took effect at one point in that
	// window, or (ambiguous) maybe never.
	Batch int64 `json:"batch,omitempty"`
	// RequestID is the write's x-strata-request-id, when it carried one:
	// every attempt sends the same id, and the op is recorded once, from
	// its first call to the answer that settled it.
	RequestID string `json:"request_id,omitempty"`
	// Attempts counts the sends of an op with a request id.
	Attempts int `json:"attempts,omitempty"`
	// Replayed says the answer was the one the group remembered under the
	// request id: an earlier send had been applied.
	Replayed bool `json:"replayed,omitempty"`
	// Txn is a transaction's request; Answer is the rest of its answer
	// (nil until one came). Each send gets a new Answer, so that recorded
	// copies of an op never share a changing one.
	Txn    *TxnRequest `json:"txn,omitempty"`
	Answer *TxnAnswer  `json:"answer,omitempty"`
}

// compactAbove is the length above which a value is recorded by digest.
const compactAbove = 256

// CompactValue is v, or for a long value (the max-size nemesis writes
// values of a MiB) "big:<length>:<sha-256 prefix>", so that histories stay
// small while equal values stay equal and different ones different.
func CompactValue(v string) string {
	if len(v) <= compactAbove {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("big:%d:%s", len(v), hex.EncodeToString(sum[:12]))
}

// Compact is op with its values compacted (CompactValue).
func Compact(op Op) Op {
	op.Value, op.Expected, op.Got = CompactValue(op.Value), CompactValue(op.Expected), CompactValue(op.Got)
	return op
}

// Recorder collects operations from many goroutines. Times come from one
// monotonic clock, so an operation that returned before another was invoked
// has a smaller Return than the other's Call.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
	limit int
}

// NewRecorder returns a recorder that keeps at most limit operations
// (further ones are counted as dropped by Add's result).
func NewRecorder(limit int) *Recorder {
	return &Recorder{start: time.Now(), limit: limit}
}

// Now is the recorder's clock in nanoseconds.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add records a finished operation. It returns false when the recorder is
// full, which tells the caller to stop issuing operations.
func (r *Recorder) Add(op Op) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ops) >= r.limit {
		return false
	}
	r.ops = append(r.ops, op)
	return true
}

// Ops returns a copy of every recorded operation.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Counts returns how many operations ended with each outcome.
func Counts(ops []Op) map[Outcome]int {
	c := map[Outcome]int{}
	for _, op := range ops {
		c[op.Result]++
	}
	return c
}

// Save writes the operations as JSON lines' worth of one JSON array.
func Save(path string, ops []Op) error {
	b, err := json.MarshalIndent(ops, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads a history written by Save.
func Load(path string) ([]Op, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []Op
	err = json.Unmarshal(b, &ops)
	return ops, err
}
