package main

import (
	"fmt"
	"strings"

	"github.com/strata/chaos/history"
)

// The largest requests a node accepts by default (storage/server/src/config.rs,
// Limits): a value of 1 MiB, a batch of 10,000 operations, a request of
// 16 MiB. Envoy buffers request bodies up to the same 16 MiB
// (REQUEST_BUFFER_BYTES in gateway/gen_envoy.py).
const (
	maxValueBytes   = 1 << 20
	maxBatchOps     = 10_000
	maxRequestBytes = 16 << 20
)

// bigBatchValues is how many maximum-size values fit in one batch with room
// for the keys and the encoding (JSON or protobuf) under maxRequestBytes.
const bigBatchValues = maxRequestBytes/maxValueBytes - 1

// bigValue is a value of exactly size bytes made of tag, so that each
// maximum-size write is distinguishable from every other.
func bigValue(tag string, size int) string {
	return strings.Repeat(tag+" ", size/(len(tag)+1)+1)[:size]
}

// maxSize writes at the node's limits through one of the front ends, into
// the run's history: one value of the maximum size, one batch of
// maximum-size values as large as a request may be, and one batch of the
// maximum number of operations (only its first and last keys are in the
// history; the batch is atomic, so they stand for it).
func (n *nemesis) maxSize() (func(), string) {
	kv := n.stores[n.rng.Intn(len(n.stores))]
	tag := fmt.Sprintf("max.%d", n.rng.Int63())
	rec := n.w.rec

	put := history.Op{Client: n.client, Kind: history.Put, Key: fmt.Sprintf("big/%d", n.rng.Intn(2)),
		Value: bigValue(tag, maxValueBytes)}
	n.w.addKey(put.Key)
	issue(kv, rec, &put)

	var big []history.Op
	for i := 0; i < bigBatchValues; i++ {
		k := fmt.Sprintf("bigb/%d", i)
		n.w.addKey(k)
		big = append(big, history.Op{Client: n.client, Key: k, Value: bigValue(fmt.Sprintf("%s.%d", tag, i), maxValueBytes)})
	}
	leaderBefore, termBefore := n.leaderTerm()
	issueBatch(kv, rec, big, n.w.batches.Add(1))
	leaderAfter, termAfter := n.leaderTerm()

	many := make([]history.Op, maxBatchOps)
	batchID := n.w.batches.Add(1)
	for i := range many {
		many[i] = history.Op{Client: n.client, Kind: history.Put, Key: fmt.Sprintf("bigo/%04d", i), Value: tag, Via: kv.Kind()}
	}
	call := rec.Now()
	kv.Batch(many)
	ret := rec.Now()
	for _, i := range []int{0, maxBatchOps - 1} {
		op := many[i]
		op.Call, op.Return, op.Batch = call, ret, batchID
		n.w.addKey(op.Key)
		rec.Add(op)
	}
	return func() {}, fmt.Sprintf("over %s: put of %d bytes %s; batch of %d × %d bytes %s (leader %d term %d before, leader %d term %d after); batch of %d puts %s",
		kv.Kind(), maxValueBytes, outcomeNote(put), bigBatchValues, maxValueBytes, outcomeNote(big[0]),
		leaderBefore, termBefore, leaderAfter, termAfter, maxBatchOps, outcomeNote(many[0]))
}

// leaderTerm is the leader the gateway reaches and its term (0 when none).
func (n *nemesis) leaderTerm() (int, uint64) {
	l := n.cl.Leader()
	if l == 0 {
		return 0, 0
	}
	s, _ := localStatus(n.cl, l)
	return l, s.Term
}

func outcomeNote(op history.Op) string {
	if op.Note == "" {
		return string(op.Result)
	}
	return fmt.Sprintf("%s (%s)", op.Result, op.Note)
}
