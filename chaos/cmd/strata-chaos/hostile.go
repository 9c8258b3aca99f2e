package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/strata/chaos/cluster"
	"github.com/strata/chaos/history"
)

// grpcCase is one hostile gRPC request: a raw body (gRPC framing included)
// sent to a method.
type grpcCase struct {
	name   string
	target string // "gateway" or "node"
	method string
	body   []byte
}

// frame wraps payload in gRPC's 5-byte length-prefixed framing.
func frame(compressed byte, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	b[0] = compressed
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

func varint(v uint64) []byte { return binary.AppendUvarint(nil, v) }

// pbField encodes one protobuf field: varint (wire 0) or bytes (wire 2).
func pbVarint(field int, v uint64) []byte { return append(varint(uint64(field<<3|0)), varint(v)...) }
func pbBytes(field int, b []byte) []byte {
	out := append(varint(uint64(field<<3|2)), varint(uint64(len(b)))...)
	return append(out, b...)
}

func raftBatch(group, from, to uint64, msgs ...[]byte) []byte {
	b := append(pbVarint(1, group), pbVarint(2, from)...)
	b = append(b, pbVarint(3, to)...)
	for _, m := range msgs {
		b = append(b, pbBytes(4, m)...)
	}
	return b
}

func hostileCases() []grpcCase {
	garbage := bytes.Repeat([]byte{0xff}, 64)
	big := bytes.Repeat([]byte{'a'}, 20<<20)
	put := "/strata.v1.KV/Put"
	send := "/strata.v1.Raft/Send"
	stream := "/strata.v1.Raft/Stream"
	wrongType := pbVarint(1, 7) // PutRequest.key is bytes, sent as a varint
	truncated := frame(0, pbBytes(1, []byte("key")))[:6]
	lying := frame(0, []byte("k"))
	binary.BigEndian.PutUint32(lying[1:], 1<<31)
	return []grpcCase{
		{"KV/Put: garbage protobuf", "gateway", put, frame(0, garbage)},
		{"KV/Put: field of the wrong wire type", "gateway", put, frame(0, wrongType)},
		{"KV/Put: truncated frame", "gateway", put, truncated},
		{"KV/Put: length prefix of 2 GiB, 1 byte sent", "gateway", put, lying},
		{"KV/Put: compressed flag without grpc-encoding", "gateway", put, frame(1, pbBytes(1, []byte("k")))},
		{"KV/Put: no message at all", "gateway", put, nil},
		{"KV/Put: two messages on a unary call", "gateway", put,
			append(frame(0, append(pbBytes(1, []byte("hostile/a")), pbBytes(2, []byte("v"))...)),
				frame(0, append(pbBytes(1, []byte("hostile/b")), pbBytes(2, []byte("v"))...))...)},
		{"KV/Put: 20 MiB value (over the 16 MiB message limit)", "gateway", put,
			frame(0, append(pbBytes(1, []byte("hostile/big")), pbBytes(2, big)...))},
		{"KV/Get: garbage protobuf", "gateway", "/strata.v1.KV/Get", frame(0, garbage)},
		{"KV/Batch: garbage protobuf", "gateway", "/strata.v1.KV/Batch", frame(0, garbage)},
		{"KV/CompareAndSwap: garbage protobuf", "gateway", "/strata.v1.KV/CompareAndSwap", frame(0, garbage)},
		{"Raft/Send through the gateway", "gateway", send, frame(0, raftBatch(1, 2, 1, garbage))},
		{"Raft/Send: garbage batch", "node", send, frame(0, garbage)},
		{"Raft/Send: garbage raft message", "node", send, frame(0, raftBatch(1, 2, 1, garbage))},
		{"Raft/Send: empty raft message bytes", "node", send, frame(0, raftBatch(1, 2, 1, []byte{}))},
		{"Raft/Send: another group", "node", send, frame(0, raftBatch(99, 2, 1, []byte{}))},
		{"Raft/Send: addressed to another node", "node", send, frame(0, raftBatch(1, 2, 7, []byte{}))},
		{"Raft/Send: from an unknown node", "node", send, frame(0, raftBatch(1, 9, 1, []byte{}))},
		{"Raft/Send: two messages on a unary call", "node", send,
			append(frame(0, raftBatch(1, 2, 1)), frame(0, raftBatch(1, 2, 1))...)},
		{"Raft/Send: truncated frame", "node", send, frame(0, raftBatch(1, 2, 1, garbage))[:20]},
		{"Raft/Send: 20 MiB message", "node", send, frame(0, raftBatch(1, 2, 1, big))},
		{"Raft/Stream through the gateway", "gateway", stream, frame(0, raftBatch(1, 2, 1, garbage))},
		{"Raft/Stream: garbage batch", "node", stream, frame(0, garbage)},
		{"Raft/Stream: an empty batch, then a garbage raft message", "node", stream,
			append(frame(0, raftBatch(1, 2, 1)), frame(0, raftBatch(1, 2, 1, garbage))...)},
		{"Raft/Stream: another group", "node", stream, frame(0, raftBatch(99, 2, 1, []byte{}))},
		{"Raft/Stream: addressed to another node", "node", stream, frame(0, raftBatch(1, 2, 7, []byte{}))},
		{"Raft/Stream: truncated frame", "node", stream, frame(0, raftBatch(1, 2, 1, garbage))[:20]},
	}
}

type grpcAnswer struct {
	Case       string `json:"case"`
	HTTPStatus int    `json:"http_status"`
	GrpcStatus string `json:"grpc_status"`
	Message    string `json:"grpc_message"`
	Err        string `json:"error,omitempty"`
	Verdict    string `json:"verdict"`
}

// h2c is an HTTP/2 client over plain TCP.
func h2c() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

// clear gRPC codes for bad input: anything but OK, UNKNOWN and INTERNAL
// (which say "server bug", not "your request is wrong").
func clearCode(code string) bool {
	switch code {
	case "3", "5", "8", "9", "11", "12", "7":
		return true
	}
	return false
}

// refusedByAuth: UNAUTHENTICATED on any case, or PERMISSION_DENIED on the
// KV service (which the anonymous role may use), is the role check's
// answer, not the decoder's.
func refusedByAuth(method, code string) bool {
	return code == "16" || (code == "7" && strings.HasPrefix(method, "/strata.v1.KV/"))
}

// sendRaw posts a raw gRPC body, with the bearer token in the metadata
// when token is not "".
func sendRaw(client *http.Client, url string, body []byte, token string) grpcAnswer {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("content-type", "application/grpc")
	req.Header.Set("te", "trailers")
	if token != "" {
		req.Header.Set("authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return grpcAnswer{Err: err.Error()}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	a := grpcAnswer{HTTPStatus: resp.StatusCode}
	a.GrpcStatus, a.Message = resp.Trailer.Get("grpc-status"), resp.Trailer.Get("grpc-message")
	if a.GrpcStatus == "" { // trailers-only response
		a.GrpcStatus, a.Message = resp.Header.Get("grpc-status"), resp.Header.Get("grpc-message")
	}
	return a
}

// cmdHostile sends malformed and oversized gRPC messages to the KV service
// through Envoy and to the internal raft service directly on a node, then
// checks every answer is a clear error, every node still runs, and the
// key space and raft terms are unchanged. The nodes check roles; the
// hostile messages carry no token (the anonymous role, write, reaches the
// decoder), and the auth cases (`authcheck.go`) try to remove a member
// without the admin role.
func cmdHostile(args []string) int {
	var c common
	fs := c.flagSet("hostile", 22300)
	c.parse(fs, args)
	cl := startCluster(c.config("cluster", 3))
	kv := gatewayClient(cl, 5*time.Second)
	var failures []string
	// Without a token: the anonymous role (write) must let them through.
	for i := 0; i < 10; i++ {
		op := history.Op{Kind: history.Put, Key: fmt.Sprintf("seed/%d", i), Value: "v"}
		kv.Put(&op)
		if op.Result != history.Ok {
			failures = append(failures, fmt.Sprintf("anonymous put of %s: %v %s", op.Key, op.Result, op.Note))
		}
	}
	before, err := cl.WaitConverged(20 * time.Second)
	if err != nil {
		fatalf("before: %v", err)
	}
	termsBefore := terms(cl)
	client := h2c()
	var answers []grpcAnswer
	for _, gc := range hostileCases() {
		url := cl.GatewayURL() + gc.method
		if gc.target == "node" {
			url = cl.NodeURL(1) + gc.method
		}
		a := sendRaw(client, url, gc.body, "")
		a.Case = gc.name
		switch {
		case a.Err != "":
			a.Verdict = "transport error"
			if gc.target == "gateway" {
				failures = append(failures, gc.name+": "+a.Err)
			}
		case refusedByAuth(gc.method, a.GrpcStatus):
			// The cases carry no token and the anonymous role may write:
			// a refusal here means the input was never looked at.
			a.Verdict = "REFUSED BY AUTH"
			failures = append(failures, fmt.Sprintf("%s: grpc-status %s %q: refused before the input was read",
				gc.name, a.GrpcStatus, a.Message))
		case clearCode(a.GrpcStatus):
			a.Verdict = "clear error"
		case strings.HasPrefix(gc.method, "/strata.v1.Raft/") && gc.target == "gateway" && a.HTTPStatus == 404:
			a.Verdict = "clear error (not routed)"
		default:
			a.Verdict = "UNCLEAR"
			failures = append(failures, fmt.Sprintf("%s: http %d grpc-status %q %q", gc.name, a.HTTPStatus,
				a.GrpcStatus, a.Message))
		}
		answers = append(answers, a)
		fmt.Printf("  %-55s http %3d grpc-status %-3s %-16s %s\n", gc.name, a.HTTPStatus, a.GrpcStatus, a.Verdict,
			truncate(a.Message+a.Err, 90))
	}
	fmt.Println("  auth (gateway; nodes with --anonymous-role " + cluster.AnonymousRole + "):")
	authAnswers, authFailures := checkAuth(cl, c.runDir)
	failures = append(failures, authFailures...)
	if dead := cl.Exited(); len(dead) > 0 {
		failures = append(failures, fmt.Sprintf("nodes %v exited", dead))
	}
	after, err := cl.WaitConverged(20 * time.Second)
	if err != nil {
		failures = append(failures, "after: "+err.Error())
	} else {
		if d := cluster.Diff(before, after); d != "" {
			failures = append(failures, "key space changed: "+d)
		}
	}
	termsAfter := terms(cl)
	fmt.Printf("  raft terms before %v after %v\n", termsBefore, termsAfter)
	report := map[string]any{"answers": answers, "auth": authAnswers, "failures": failures,
		"terms_before": termsBefore, "terms_after": termsAfter}
	path := writeResult(c.runDir, report)
	fmt.Printf("hostile: %d cases, %d auth cases, %d unclear or harmful; %s\n", len(answers), len(authAnswers),
		len(failures), path)
	return exitCode(failures)
}

func terms(cl *cluster.Cluster) map[int]uint64 {
	out := map[int]uint64{}
	for _, id := range cl.IDs() {
		st, body := cl.Get(cl.NodeURL(id)+"/v1/cluster/status", 2*time.Second)
		var s struct {
			Nodes []struct {
				ID   int    `json:"id"`
				Term uint64 `json:"term"`
			} `json:"nodes"`
		}
		if st == 200 && json.Unmarshal(body, &s) == nil {
			for _, n := range s.Nodes {
				if n.ID == id {
					out[id] = n.Term
				}
			}
		}
	}
	return out
}

// cmdExec starts a cluster, runs the command after "--" with STRATA_URL set
// to the gateway and STRATA_ADMIN_TOKEN to an admin token the nodes take
// (requests without one may read and write keys), and stops the cluster.
func cmdExec(args []string) int {
	var c common
	fs := c.flagSet("exec", 22400)
	c.parse(fs, args)
	if fs.NArg() == 0 {
		fmt.Println("usage: strata-chaos exec [flags] -- command args...")
		return 2
	}
	cl := startCluster(c.config("cluster", 3))
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Env = append(os.Environ(), "STRATA_URL="+cl.GatewayURL(), "STRATA_RUN_DIR="+c.runDir,
		"STRATA_ADMIN_TOKEN="+cl.AdminToken())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	atExit(func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	err := cmd.Run()
	if dead := cl.Exited(); len(dead) > 0 {
		fmt.Printf("exec: nodes %v exited during the command; logs in %s\n", dead, c.runDir)
		return 1
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Println(err)
		return 1
	}
	return 0
}
