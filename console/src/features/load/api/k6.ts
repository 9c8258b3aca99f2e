// k6's own figures, from its REST API (`k6 run --address`), which the gateway proxies
// under /k6/ while a run is in progress. k6's answers are described here and read
// defensively: only the metrics the view shows are taken.
import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { sendJson } from '../../../api/send';

interface K6Metric {
  id: string;
  attributes: { sample?: Record<string, number> };
}

export interface K6Figures {
  /** When the browser read them (k6 reports no time of its own). */
  atMs: number;
  vus: number | null;
  /** http_reqs so far; the browser turns two readings into requests per second. */
  requests: number | null;
  p95Ms: number | null;
  /** k6's REST API reports the percentiles of summaryTrendStats only in its summary: often absent. */
  p99Ms: number | null;
  /** The share of failed checks, 0..1. */
  checksFailed: number | null;
  /** The share of failed HTTP requests, 0..1. */
  requestsFailed: number | null;
}

function sampleOf(metrics: K6Metric[], id: string): Record<string, number> | undefined {
  return metrics.find((m) => m.id === id)?.attributes.sample;
}

export function parseK6Metrics(body: unknown, atMs: number): K6Figures {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new Error('malformed answer from /k6/v1/metrics');
  const metrics = data as K6Metric[];
  const duration = sampleOf(metrics, 'http_req_duration');
  const checks = sampleOf(metrics, 'checks')?.rate;
  return {
    atMs,
    vus: sampleOf(metrics, 'vus')?.value ?? null,
    requests: sampleOf(metrics, 'http_reqs')?.count ?? null,
    p95Ms: duration?.['p(95)'] ?? null,
    p99Ms: duration?.['p(99)'] ?? null,
    checksFailed: checks === undefined ? null : 1 - checks,
    requestsFailed: sampleOf(metrics, 'http_req_failed')?.rate ?? null,
  };
}

export interface K6Point {
  atMs: number;
  requestsPerS: number;
}

/** Readings kept for the chart: about two minutes of one-second readings. */
const HISTORY_POINTS = 120;

/** The latest reading and k6's requests per second between consecutive readings. */
export interface K6Series {
  latest: K6Figures;
  history: K6Point[];
}

/**
 * Adds a reading to the series. k6 counts requests since its run started; two readings
 * make a rate. A counter lower than before is a new run: its series starts over.
 */
export function nextSeries(previous: K6Series | undefined, latest: K6Figures): K6Series {
  const before = previous?.latest;
  const was = before?.requests ?? null;
  if (!previous || !before || was === null || latest.requests === null || latest.requests < was) {
    return { latest, history: [] };
  }
  if (latest.atMs <= before.atMs) return { latest, history: previous.history };
  const requestsPerS = (latest.requests - was) / ((latest.atMs - before.atMs) / 1000);
  return { latest, history: [...previous.history, { atMs: latest.atMs, requestsPerS }].slice(-HISTORY_POINTS) };
}

const K6_KEY = ['load', 'k6', 'metrics'] as const;

/**
 * k6's metrics once a second while a run is in progress (the query is off otherwise);
 * each reading extends the series the query holds.
 */
export function k6MetricsQuery(client: QueryClient, active: boolean) {
  return queryOptions({
    queryKey: K6_KEY,
    queryFn: async ({ signal }) => {
      const body = await sendJson<unknown>('GET', '/k6/v1/metrics', undefined, signal);
      return nextSeries(client.getQueryData<K6Series>(K6_KEY), parseK6Metrics(body, Date.now()));
    },
    enabled: active,
    refetchInterval: active ? 1000 : false,
    retry: false,
  });
}
