import recorded from '../../../test/recorded/load.json';
import { isClientOperation, isErrorCode, nodeRate, quantileMs } from './rates';
import type { ClusterStats, Histogram } from './types';

// statsA and statsB were taken about two seconds apart from a real cluster under a k6 smoke run.
const statsA = recorded.statsA.body as ClusterStats;
const statsB = recorded.statsB.body as ClusterStats;

describe('quantileMs', () => {
  const histogram = (count: number, buckets: [number, number][]): Histogram => ({
    count,
    sum: 0,
    buckets: buckets.map(([le, c]) => ({ le, count: c })),
  });

  it('interpolates inside the bucket that holds the rank, from the difference of two histograms', () => {
    // Proves quantiles come from what happened between the samples, not since the node started.
    const before = histogram(100, [[0.001, 100], [0.01, 100], [0.1, 100]]);
    const after = histogram(200, [[0.001, 100], [0.01, 150], [0.1, 200]]);
    // Between them: 50 in (1 ms, 10 ms], 50 in (10 ms, 100 ms].
    expect(quantileMs(before, after, 0.5)).toBeCloseTo(10, 5);
    expect(quantileMs(before, after, 0.99)).toBeCloseTo(10 + 90 * (49 / 50), 5);
    expect(quantileMs(after, after, 0.5)).toBeNull();
  });

  it('answers the last finite bound for observations beyond it', () => {
    expect(quantileMs(undefined, histogram(10, [[0.001, 0], [0.002, 5]]), 0.99)).toBe(2);
  });
});

describe('nodeRate', () => {
  it('turns the recorded counters into rates of client operations only', () => {
    // Proves the rates are the count differences over the nodes' own clock, and that
    // health checks and the raft transport are left out.
    const before = statsA.nodes.find((n) => n.id === statsB.answered_by);
    const after = statsB.nodes.find((n) => n.id === statsB.answered_by);
    if (!before || !after) throw new Error('the recording lacks the answering node');
    const rate = nodeRate(before, after);
    expect(rate).not.toBeNull();
    if (!rate) return;
    const seconds = (after.at_ms - before.at_ms) / 1000;
    const count = (s: typeof after, route: string) =>
      (s.stats?.api.requests ?? []).filter((r) => r.protocol === 'rest' && r.route === route).reduce((n, r) => n + r.count, 0);
    const puts = rate.operations.find((op) => op.operation === 'rest PUT /v1/kv/{key}');
    expect(puts?.opsPerS).toBeCloseTo((count(after, 'PUT /v1/kv/{key}') - count(before, 'PUT /v1/kv/{key}')) / seconds, 6);
    expect(rate.operations.every((op) => !op.operation.includes('/health/') && !op.operation.includes('Raft'))).toBe(true);
    expect(rate.opsPerS).toBeGreaterThan(0);
    expect(puts?.p50Ms).not.toBeNull();
  });

  it('counts a node restart as a fresh total, and needs time to pass', () => {
    const node = statsB.nodes[0];
    if (!node?.stats) throw new Error('no stats recorded');
    const restarted = { ...node, at_ms: node.at_ms + 1000, stats: { ...node.stats, api: { ...node.stats.api, requests: [{ protocol: 'rest', route: 'PUT /v1/kv/{key}', code: '200', count: 3 }] } } };
    expect(nodeRate(node, restarted)?.opsPerS).toBeCloseTo(3 - 0, 6);
    expect(nodeRate(node, node)).toBeNull();
  });

  it('classifies operations and errors', () => {
    expect(isClientOperation('rest', 'GET /health/leader')).toBe(false);
    expect(isClientOperation('grpc', '/strata.v1.Cluster/LocalStats')).toBe(false);
    expect(isClientOperation('grpc', '/strata.v1.KV/Put')).toBe(true);
    expect(isClientOperation('rest', 'POST /v1/cas')).toBe(true);
    expect(isErrorCode('rest', 'GET /v1/kv/{key}', '404')).toBe(false);
    expect(isErrorCode('rest', 'PUT /v1/kv/{key}', '503')).toBe(true);
    expect(isErrorCode('grpc', '/strata.v1.KV/Put', 'Unavailable')).toBe(true);
    expect(isErrorCode('grpc', '/strata.v1.KV/Put', 'Ok')).toBe(false);
  });
});
