package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"time"

	"github.com/strata/chaos/cluster"
)

// The auth part of `hostile`: what a deployment relies on once the nodes
// check roles. Through the gateway, removing member 1 (REST `DELETE
// /v1/cluster/members/1` and gRPC `strata.v1.Cluster/RemoveMember`) must
// be refused without a token (the anonymous role is write), with a token
// from a key the nodes do not trust, and with a token of the write role;
// the member must still be there afterwards. An admin token must get
// through the same check: removing a node that was never a member is
// answered NOT_FOUND by the route itself, not refused.

// authCase is one request of the auth check.
type authCase struct {
	name string
	grpc bool
	id   int    // the member to remove
	cred string // "none", "write", "foreign" or "admin"
	// wantHTTP / wantCode: the REST status and body code, or the gRPC
	// status, the answer must carry.
	wantHTTP int
	wantCode string
}

func authCases() []authCase {
	var cases []authCase
	for _, grpc := range []bool{false, true} {
		cases = append(cases,
			authCase{grpc: grpc, id: 1, cred: "none", wantHTTP: 401, wantCode: "UNAUTHENTICATED"},
			authCase{grpc: grpc, id: 1, cred: "foreign", wantHTTP: 401, wantCode: "UNAUTHENTICATED"},
			authCase{grpc: grpc, id: 1, cred: "write", wantHTTP: 403, wantCode: "PERMISSION_DENIED"},
			authCase{grpc: grpc, id: 9, cred: "admin", wantHTTP: 404, wantCode: "NOT_FOUND"},
		)
	}
	for i := range cases {
		c := &cases[i]
		how := fmt.Sprintf("REST DELETE /v1/cluster/members/%d", c.id)
		if c.grpc {
			how = fmt.Sprintf("gRPC Cluster/RemoveMember id %d", c.id)
			c.wantCode = grpcCodeOf[c.wantCode]
		}
		c.name = fmt.Sprintf("%s, token: %s", how, c.cred)
	}
	return cases
}

// grpcCodeOf is the gRPC status number of each code the check expects.
var grpcCodeOf = map[string]string{"UNAUTHENTICATED": "16", "PERMISSION_DENIED": "7", "NOT_FOUND": "5"}

type authAnswer struct {
	Case       string `json:"case"`
	HTTPStatus int    `json:"http_status"`
	Code       string `json:"code"` // the REST body's code, or the gRPC status
	Message    string `json:"message"`
	Err        string `json:"error,omitempty"`
	Verdict    string `json:"verdict"`
}

// judgeAuth is the verdict on one answer: "" when it is what the case
// wants, else what is wrong.
func judgeAuth(c authCase, a authAnswer) string {
	switch {
	case a.Err != "":
		return "transport error: " + a.Err
	case c.grpc && a.Code != c.wantCode:
		return fmt.Sprintf("grpc-status %q (http %d), want %s", a.Code, a.HTTPStatus, c.wantCode)
	case !c.grpc && (a.HTTPStatus != c.wantHTTP || a.Code != c.wantCode):
		return fmt.Sprintf("http %d code %q, want %d %s", a.HTTPStatus, a.Code, c.wantHTTP, c.wantCode)
	}
	return ""
}

// sendREST sends an HTTP/1.1 request with an optional bearer token and
// returns the status and the body's error code.
func sendREST(method, url, token string) authAnswer {
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return authAnswer{Err: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &e)
	a := authAnswer{HTTPStatus: resp.StatusCode, Code: e.Code, Message: e.Message}
	if e.Code == "" {
		a.Message = string(body)
	}
	return a
}

// membersNow is the sorted member ids the gateway lists.
func membersNow(cl *cluster.Cluster) ([]int, error) {
	m, err := members(cl)
	if err != nil {
		return nil, err
	}
	var ids []int
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids, nil
}

// checkAuth runs the auth cases against cl's gateway and returns every
// answer and every failure.
func checkAuth(cl *cluster.Cluster, runDir string) ([]authAnswer, []string) {
	var failures []string
	tokens := map[string]string{"none": "", "admin": cl.AdminToken()}
	var err error
	if tokens["write"], err = cl.Token("write"); err != nil {
		return nil, []string{"auth: " + err.Error()}
	}
	// An admin token, but signed by a key pair the nodes never heard of.
	if tokens["foreign"], err = cl.ForeignToken(filepath.Join(runDir, "foreign-auth"), "admin"); err != nil {
		return nil, []string{"auth: " + err.Error()}
	}
	before, err := membersNow(cl)
	if err != nil {
		return nil, []string{"auth: members before: " + err.Error()}
	}
	client := h2c()
	var answers []authAnswer
	for _, c := range authCases() {
		var a authAnswer
		if c.grpc {
			body := frame(0, pbVarint(1, uint64(c.id))) // RemoveMemberRequest{id}
			g := sendRaw(client, cl.GatewayURL()+"/strata.v1.Cluster/RemoveMember", body, tokens[c.cred])
			a = authAnswer{HTTPStatus: g.HTTPStatus, Code: g.GrpcStatus, Message: g.Message, Err: g.Err}
		} else {
			a = sendREST(http.MethodDelete, fmt.Sprintf("%s/v1/cluster/members/%d", cl.GatewayURL(), c.id),
				tokens[c.cred])
		}
		a.Case = c.name
		a.Verdict = "as expected"
		if v := judgeAuth(c, a); v != "" {
			a.Verdict = "WRONG"
			failures = append(failures, fmt.Sprintf("%s: %s (%s)", c.name, v, truncate(a.Message, 120)))
		}
		answers = append(answers, a)
		fmt.Printf("  %-55s http %3d code %-17s %-11s %s\n", c.name, a.HTTPStatus, a.Code, a.Verdict,
			truncate(a.Message+a.Err, 70))
	}
	after, err := membersNow(cl)
	switch {
	case err != nil:
		failures = append(failures, "auth: members after: "+err.Error())
	case fmt.Sprint(before) != fmt.Sprint(after):
		failures = append(failures, fmt.Sprintf("auth: members were %v, are %v after refused removals", before, after))
	case !contains(after, 1):
		failures = append(failures, fmt.Sprintf("auth: member 1 is gone: members %v", after))
	default:
		fmt.Printf("  members before %v after %v\n", before, after)
	}
	return answers, failures
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
