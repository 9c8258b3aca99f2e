package main

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/strata/chaos/history"
)

// Only UNAVAILABLE marked x-strata-retryable: true (in the trailer, where a
// trailers-only answer carries it, or the header) means "not applied";
// every other status, marked or not, and the client's own deadline are
// ambiguous — the contract storage/client's is_retryable implements.
func TestGRPCOutcome_onlyMarkedUnavailableIsNotApplied(t *testing.T) {
	marked := metadata.Pairs(retryableMetadata, "true")
	cases := []struct {
		name            string
		err             error
		header, trailer metadata.MD
		want            history.Outcome
	}{
		{"marked in trailer", status.Error(codes.Unavailable, "no leader"), nil, marked, history.Failed},
		{"marked in header", status.Error(codes.Unavailable, "no leader"), marked, nil, history.Failed},
		{"unmarked unavailable", status.Error(codes.Unavailable, "connection reset"), nil, nil, history.Unknown},
		{"marked false", status.Error(codes.Unavailable, "x"), nil, metadata.Pairs(retryableMetadata, "false"), history.Unknown},
		{"deadline exceeded", status.Error(codes.DeadlineExceeded, "outcome unknown"), nil, marked, history.Unknown},
		{"unknown", status.Error(codes.Unknown, "x"), nil, marked, history.Unknown},
		{"invalid argument", status.Error(codes.InvalidArgument, "x"), nil, nil, history.Unknown},
		{"client deadline", context.DeadlineExceeded, nil, nil, history.Unknown},
	}
	for _, c := range cases {
		got, note := grpcOutcome(classifiedError{err: c.err, header: c.header, trailer: c.trailer})
		if got != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, got, note, c.want)
		}
	}
}
