package main

import "testing"

// The auth check passes only the refusal each case names: an answer that
// let the removal through, or refused it with the wrong code, fails it.
func TestJudgeAuthWantsTheNamedRefusal(t *testing.T) {
	cases := authCases()
	find := func(grpc bool, cred string) authCase {
		for _, c := range cases {
			if c.grpc == grpc && c.cred == cred {
				return c
			}
		}
		t.Fatalf("no case grpc=%v cred=%s", grpc, cred)
		return authCase{}
	}
	for _, tc := range []struct {
		c    authCase
		a    authAnswer
		pass bool
	}{
		{find(false, "none"), authAnswer{HTTPStatus: 401, Code: "UNAUTHENTICATED"}, true},
		{find(false, "none"), authAnswer{HTTPStatus: 200}, false},
		{find(false, "none"), authAnswer{HTTPStatus: 403, Code: "PERMISSION_DENIED"}, false},
		{find(false, "write"), authAnswer{HTTPStatus: 403, Code: "PERMISSION_DENIED"}, true},
		{find(false, "write"), authAnswer{HTTPStatus: 401, Code: "UNAUTHENTICATED"}, false},
		{find(false, "foreign"), authAnswer{HTTPStatus: 200}, false},
		{find(false, "admin"), authAnswer{HTTPStatus: 404, Code: "NOT_FOUND"}, true},
		{find(false, "admin"), authAnswer{HTTPStatus: 401, Code: "UNAUTHENTICATED"}, false},
		{find(true, "none"), authAnswer{HTTPStatus: 200, Code: "16"}, true},
		{find(true, "none"), authAnswer{HTTPStatus: 200, Code: "0"}, false},
		{find(true, "write"), authAnswer{HTTPStatus: 200, Code: "7"}, true},
		{find(true, "write"), authAnswer{HTTPStatus: 200, Code: "16"}, false},
		{find(true, "foreign"), authAnswer{Err: "connection reset"}, false},
		{find(true, "admin"), authAnswer{HTTPStatus: 200, Code: "5"}, true},
		{find(true, "admin"), authAnswer{HTTPStatus: 200, Code: "7"}, false},
	} {
		if got := judgeAuth(tc.c, tc.a) == ""; got != tc.pass {
			t.Errorf("%s answered %+v: passed %v, want %v", tc.c.name, tc.a, got, tc.pass)
		}
	}
	if !refusedByAuth("/strata.v1.KV/Put", "7") || !refusedByAuth("/strata.v1.Raft/Send", "16") ||
		refusedByAuth("/strata.v1.Raft/Send", "7") || refusedByAuth("/strata.v1.KV/Put", "3") {
		t.Error("refusedByAuth")
	}
}
