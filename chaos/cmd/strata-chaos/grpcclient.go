package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/strata/chaos/history"
	"github.com/strata/chaos/kvpb"
)

// grpcClient talks strata.v1.KV to the gateway's listener (Envoy routes
// gRPC and REST on one port) and classifies every answer by the gRPC error
// contract the shipped client (storage/client) implements: only UNAVAILABLE
// marked x-strata-retryable: true means "not applied". Everything else —
// DEADLINE_EXCEEDED (Envoy's answer to UT, UC, UR, ...), UNKNOWN, an
// unmarked UNAVAILABLE (a connection that died mid-call), CANCELLED, the
// client's own deadline — is ambiguous.
type grpcClient struct {
	conn    *grpc.ClientConn
	timeout time.Duration
}

// maxGRPCMessage leaves room for the largest request a node accepts (16 MiB)
// and its answer.
const maxGRPCMessage = 64 << 20

// retryableMetadata is the mark a node, or the gateway for a request it
// never sent, puts on an UNAVAILABLE that applied nothing.
const retryableMetadata = "x-strata-retryable"

// dialGRPC makes a client for the gateway at addr (host:port). The
// connection is made lazily and re-made after failures by grpc-go.
func dialGRPC(addr string, timeout time.Duration) (*grpcClient, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCMessage), grpc.MaxCallSendMsgSize(maxGRPCMessage)))
	if err != nil {
		return nil, err
	}
	return &grpcClient{conn: conn, timeout: timeout}, nil
}

func (c *grpcClient) Close() { _ = c.conn.Close() }

// Kind names the front end.
func (c *grpcClient) Kind() string { return "grpc" }

// call invokes method and returns the node that answered (from the
// x-strata-node header, else the response header's node id) and the error.
func (c *grpcClient) call(method string, req, resp any, nodeOf func() uint64) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var header, trailer metadata.MD
	err := c.conn.Invoke(ctx, "/strata.v1.KV/"+method, req, resp, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		return first(header, "x-strata-node"), classifiedError{err: err, header: header, trailer: trailer}
	}
	if n := first(header, "x-strata-node"); n != "" {
		return n, nil
	}
	if id := nodeOf(); id != 0 {
		return strconv.FormatUint(id, 10), nil
	}
	return "", nil
}

// classifiedError carries a failed call's status with the metadata that
// came with it: a trailers-only answer (what Envoy and tonic send for an
// error) puts the mark in the trailer, an answer that failed after its
// headers may carry it in either.
type classifiedError struct {
	err             error
	header, trailer metadata.MD
}

func (e classifiedError) Error() string { return e.err.Error() }

// grpcOutcome is the outcome of a failed call by the contract above.
func grpcOutcome(err error) (history.Outcome, string) {
	var ce classifiedError
	marked := false
	if errors.As(err, &ce) {
		marked = first(ce.trailer, retryableMetadata) == "true" || first(ce.header, retryableMetadata) == "true"
		err = ce.err
	}
	st := status.Convert(err)
	note := fmt.Sprintf("grpc %s %s", st.Code(), truncate(st.Message(), 120))
	if marked {
		note += " (retryable)"
	}
	if st.Code() == codes.Unavailable && marked {
		return history.Failed, note
	}
	return history.Unknown, note
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Get reads op.Key linearizably.
func (c *grpcClient) Get(op *history.Op) {
	var resp kvpb.GetResponse
	node, err := c.call("Get", &kvpb.GetRequest{Key: []byte(op.Key)}, &resp,
		func() uint64 { return resp.GetHeader().GetNodeId() })
	op.Node = node
	if err != nil {
		op.Result, op.Note = grpcOutcome(err)
		return
	}
	op.Result, op.Found = history.Ok, resp.GetFound()
	if op.Found {
		op.Got = string(resp.GetValue())
	}
}

// Put writes op.Value.
func (c *grpcClient) Put(op *history.Op) {
	var resp kvpb.PutResponse
	node, err := c.call("Put", &kvpb.PutRequest{Key: []byte(op.Key), Value: []byte(op.Value)}, &resp,
		func() uint64 { return resp.GetHeader().GetNodeId() })
	op.Node = node
	if err != nil {
		op.Result, op.Note = grpcOutcome(err)
		return
	}
	op.Result = history.Ok
}

// Cas compares op.Key with op.Expected (or absence) and writes op.Value.
func (c *grpcClient) Cas(op *history.Op) {
	req := &kvpb.CompareAndSwapRequest{Key: []byte(op.Key), Value: []byte(op.Value), RequestId: op.RequestID}
	if !op.ExpectedAbsent {
		req.Expected = []byte(op.Expected)
	}
	var resp kvpb.CompareAndSwapResponse
	node, err := c.call("CompareAndSwap", req, &resp, func() uint64 { return resp.GetHeader().GetNodeId() })
	op.Node = node
	if err != nil {
		op.Result, op.Note = grpcOutcome(err)
		return
	}
	op.Result, op.Succeeded = history.Ok, resp.GetSucceeded()
	if resp.Current != nil {
		op.Found, op.Got = true, string(resp.GetCurrent())
	}
}

// Batch writes every op (all puts) in one atomic Batch call.
func (c *grpcClient) Batch(ops []history.Op) {
	req := &kvpb.BatchRequest{}
	for _, op := range ops {
		req.Ops = append(req.Ops, &kvpb.BatchOp{Op: &kvpb.BatchOp_Put{Put: &kvpb.PutOp{Key: []byte(op.Key), Value: []byte(op.Value)}}})
	}
	var resp kvpb.BatchResponse
	node, err := c.call("Batch", req, &resp, func() uint64 { return resp.GetHeader().GetNodeId() })
	result, note := history.Ok, ""
	if err != nil {
		result, note = grpcOutcome(err)
	}
	for i := range ops {
		ops[i].Result, ops[i].Note, ops[i].Node = result, note, node
	}
}
