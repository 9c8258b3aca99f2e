import recorded from '../../../test/recorded/k6.json';
import { parseSse } from '../../../test/sse';
import { initialK6Series, k6Reducer, type K6Series } from './k6';

function fold(events: readonly { event: string; data: string }[], from: K6Series = initialK6Series): K6Series {
  return events.reduce((state, e) => k6Reducer(state, { type: 'event', name: e.event, data: e.data }), from);
}

const PARAM = JSON.stringify({
  period: 1000,
  aggregates: { counter: ['count', 'rate'], gauge: ['value'], rate: ['rate'], trend: ['avg', 'max', 'med', 'min', 'p(90)', 'p(95)', 'p(99)'] },
});

describe('k6Reducer', () => {
  it('reads each metric’s columns by the announced outline, metrics sorted by name', () => {
    // Proves the order: `time` is announced first but sorts after the http_* metrics, and
    // a metric announced later (vus) takes its sorted place in later snapshots.
    const state = fold([
      { event: 'param', data: PARAM },
      { event: 'metric', data: JSON.stringify({ time: { type: 'gauge', contains: 'time' } }) },
      {
        event: 'metric',
        data: JSON.stringify({
          http_req_duration: { type: 'trend', contains: 'time' },
          http_reqs: { type: 'counter' },
          checks: { type: 'rate' },
        }),
      },
      { event: 'metric', data: JSON.stringify({ vus: { type: 'gauge' } }) },
      {
        event: 'snapshot',
        data: JSON.stringify([[0.75], [2, 3, 1.5, 0.5, 2.5, 2.8, 2.9], [20, 19.5], [1795771353309], [4]]),
      },
    ]);
    expect(state.malformed).toBe(0);
    expect(state.latest).toEqual({
      atMs: 1795771353309,
      vus: 4,
      requestsPerS: 19.5,
      p95Ms: 2.8,
      p99Ms: 2.9,
      checksFailed: 0.25,
      requestsFailed: null,
    });
    expect(state.history).toEqual([{ atMs: 1795771353309, requestsPerS: 19.5 }]);
  });

  it('keeps the VU count through a second in which k6 sampled none', () => {
    const state = fold([
      { event: 'param', data: PARAM },
      { event: 'metric', data: JSON.stringify({ time: { type: 'gauge' }, vus: { type: 'gauge' } }) },
      { event: 'snapshot', data: JSON.stringify([[1795771353309], [3]]) },
      { event: 'snapshot', data: JSON.stringify([[1795771354309], []]) },
    ]);
    expect(state.malformed).toBe(0);
    expect(state.latest?.atMs).toBe(1795771354309);
    expect(state.latest?.vus).toBe(3);
  });

  it('skips a snapshot that does not fit the outline instead of misreading it', () => {
    const announced = fold([
      { event: 'param', data: PARAM },
      { event: 'metric', data: JSON.stringify({ time: { type: 'gauge' }, vus: { type: 'gauge' } }) },
    ]);
    const state = fold(
      [
        { event: 'snapshot', data: JSON.stringify([[1795771353309]]) },
        // Columns swapped: the clock is not a time in milliseconds.
        { event: 'snapshot', data: JSON.stringify([[4], [1795771353309]]) },
        { event: 'snapshot', data: 'not json' },
        { event: 'metric', data: JSON.stringify({ x: { type: 'histogram' } }) },
      ],
      announced,
    );
    expect(state.latest).toBeNull();
    expect(state.malformed).toBe(4);
  });

  it('starts over on a new connection, which k6 replays from the run’s start', () => {
    const state = fold(parseSse(recorded.k6Events.body));
    expect(state.latest).not.toBeNull();
    expect(k6Reducer(state, { type: 'opened' })).toEqual(initialK6Series);
  });

  it('decodes every snapshot k6 sent during a real 20/s smoke run', () => {
    // Proves the outline against k6 itself (recorded through the gateway's /k6/events by
    // scripts/record-payloads.mjs): no snapshot is skipped, the clock advances a second a
    // snapshot, and the figures are a run of 20 iterations a second, each of two to four
    // requests (smoke.js). The recording holds submetrics (`{group:::setup}`) that are
    // empty after the first second, and a metric announced mid-run (dropped_iterations).
    const events = parseSse(recorded.k6Events.body);
    const snapshots = events.filter((e) => e.event === 'snapshot');
    expect(snapshots.length).toBeGreaterThanOrEqual(3);
    let state = initialK6Series;
    const clock: number[] = [];
    for (const e of events) {
      state = k6Reducer(state, { type: 'event', name: e.event, data: e.data });
      if (e.event === 'snapshot' && state.latest) clock.push(state.latest.atMs);
    }
    expect(state.malformed).toBe(0);
    expect(clock.length).toBe(snapshots.length);
    for (const [i, at] of clock.entries()) {
      if (i > 0) expect(at - (clock[i - 1] ?? 0)).toBeGreaterThanOrEqual(900);
    }
    const steady = state.history.slice(1).map((p) => p.requestsPerS);
    for (const rps of steady) expect(rps).toBeGreaterThan(30);
    for (const rps of steady) expect(rps).toBeLessThan(100);
    const latest = state.latest;
    if (!latest) throw new Error('figures');
    expect(latest.p99Ms).toBeGreaterThan(0);
    expect(latest.p99Ms ?? 0).toBeGreaterThanOrEqual(latest.p95Ms ?? Infinity);
    expect(latest.checksFailed).toBe(0);
  });
});
