// k6's own figures, from its web dashboard's event stream (k6 runs with
// K6_WEB_DASHBOARD=true), which the gateway proxies as /k6/events while a run is in
// progress. Every second k6 sends a `snapshot`: that second's aggregates of every
// metric, p(99) included, as arrays in a fixed order. The order is announced by other
// events: `param` names the aggregates of each metric type, and each `metric` event
// names metrics as they first appear; a snapshot lists every metric announced so far,
// sorted by name. The stream replays from the run's start to each new connection.
// Only the metrics the view shows are taken, and a snapshot that does not fit the
// announced outline is counted and skipped rather than misread.

export const K6_EVENTS_URL = '/k6/events';

type MetricType = 'counter' | 'gauge' | 'rate' | 'trend';

const METRIC_TYPES: readonly string[] = ['counter', 'gauge', 'rate', 'trend'];

export interface K6Figures {
  /** k6's clock at the end of the second the figures cover. */
  atMs: number;
  vus: number | null;
  requestsPerS: number | null;
  p95Ms: number | null;
  p99Ms: number | null;
  /** The share of failed checks, 0..1. */
  checksFailed: number | null;
  /** The share of failed HTTP requests, 0..1. */
  requestsFailed: number | null;
}

export interface K6Point {
  atMs: number;
  requestsPerS: number;
}

/** Readings kept for the chart: about two minutes of one-second snapshots. */
export const HISTORY_POINTS = 120;

export interface K6Series {
  /** The aggregates each metric type carries, in the order its values come. */
  aggregates: Partial<Record<MetricType, string[]>>;
  /** Every metric announced so far, with its type. */
  types: Record<string, MetricType>;
  latest: K6Figures | null;
  history: K6Point[];
  /** Events that did not fit the outline (a k6 whose format changed). */
  malformed: number;
}

export const initialK6Series: K6Series = { aggregates: {}, types: {}, latest: null, history: [], malformed: 0 };

export type K6Action = { type: 'opened' } | { type: 'event'; name: string; data: string };

function parse(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function withParam(state: K6Series, value: unknown): K6Series | null {
  const aggregates = isRecord(value) ? value.aggregates : undefined;
  if (!isRecord(aggregates)) return null;
  const kept: Partial<Record<MetricType, string[]>> = {};
  for (const [type, names] of Object.entries(aggregates)) {
    if (!METRIC_TYPES.includes(type) || !Array.isArray(names)) return null;
    kept[type as MetricType] = names.map(String);
  }
  return { ...state, aggregates: kept };
}

function withMetrics(state: K6Series, value: unknown): K6Series | null {
  if (!isRecord(value)) return null;
  const types = { ...state.types };
  for (const [name, metric] of Object.entries(value)) {
    const type = isRecord(metric) ? metric.type : undefined;
    if (typeof type !== 'string' || !METRIC_TYPES.includes(type)) return null;
    types[name] = type as MetricType;
  }
  return { ...state, types };
}

/** The snapshot's values by metric and aggregate, or null if it does not fit the outline. */
function decode(state: K6Series, value: unknown): Map<string, Record<string, number>> | null {
  const names = Object.keys(state.types).sort();
  if (!Array.isArray(value) || value.length !== names.length) return null;
  const out = new Map<string, Record<string, number>>();
  for (const [i, name] of names.entries()) {
    const row: unknown = value[i];
    const type = state.types[name];
    const columns = type ? state.aggregates[type] : undefined;
    if (!Array.isArray(row) || !columns) return null;
    // A metric with no samples yet in this period may come shorter; its figures are absent.
    if (row.length !== columns.length) continue;
    const figures: Record<string, number> = {};
    for (const [j, column] of columns.entries()) {
      const v: unknown = row[j];
      if (typeof v === 'number') figures[column] = v;
    }
    out.set(name, figures);
  }
  return out;
}

function figuresOf(metrics: Map<string, Record<string, number>>, before: K6Figures | null): K6Figures | null {
  const atMs = metrics.get('time')?.value;
  // k6's clock in milliseconds: anything else means the columns were misread.
  if (atMs === undefined || atMs < 1e12) return null;
  const duration = metrics.get('http_req_duration');
  const checks = metrics.get('checks')?.rate;
  return {
    atMs,
    // A gauge holds its last value: a second in which k6 sampled no VUs keeps the count.
    vus: metrics.get('vus')?.value ?? before?.vus ?? null,
    requestsPerS: metrics.get('http_reqs')?.rate ?? null,
    p95Ms: duration?.['p(95)'] ?? null,
    p99Ms: duration?.['p(99)'] ?? null,
    checksFailed: checks === undefined ? null : 1 - checks,
    requestsFailed: metrics.get('http_req_failed')?.rate ?? null,
  };
}

/**
 * Folds k6's events into the figures the view shows. A new connection starts over:
 * k6 replays its stream from the run's start.
 */
export function k6Reducer(state: K6Series, action: K6Action): K6Series {
  if (action.type === 'opened') return initialK6Series;
  const malformed = { ...state, malformed: state.malformed + 1 };
  switch (action.name) {
    case 'param':
      return withParam(state, parse(action.data)) ?? malformed;
    case 'metric':
      return withMetrics(state, parse(action.data)) ?? malformed;
    case 'snapshot': {
      const metrics = decode(state, parse(action.data));
      const latest = metrics && figuresOf(metrics, state.latest);
      if (!latest) return malformed;
      const history =
        latest.requestsPerS === null
          ? state.history
          : [...state.history, { atMs: latest.atMs, requestsPerS: latest.requestsPerS }].slice(-HISTORY_POINTS);
      return { ...state, latest, history };
    }
    default:
      return state;
  }
}

/** The SSE event names the view follows. */
export const K6_EVENTS = ['param', 'metric', 'snapshot'] as const;
