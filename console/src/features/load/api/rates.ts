// The nodes' counters are totals since each node started; the browser turns two samples
// of the same node into rates, and two histograms into the quantiles of what happened
// between them.
import type { Histogram, MemberStats, RequestCount } from './types';

/** Client operations: the KV API over REST and gRPC. Health checks, stats and the raft transport are not load. */
export function isClientOperation(protocol: string, route: string): boolean {
  if (protocol === 'grpc') return route.startsWith('/strata.v1.KV/');
  return /^(GET|PUT|DELETE|POST) \/v1\/(kv|batch|cas)/.test(route);
}

/** Whether a response code is an error: REST 4xx/5xx except 404 on a read, gRPC anything but OK. */
export function isErrorCode(protocol: string, route: string, code: string): boolean {
  if (protocol === 'grpc') return code.toLowerCase() !== 'ok' && code !== 'NotFound';
  const status = Number(code);
  if (status === 404 && route.startsWith('GET ')) return false;
  return status >= 400;
}

export interface OperationRate {
  /** `rest PUT /v1/kv/{key}` or `grpc /strata.v1.KV/Put`. */
  operation: string;
  opsPerS: number;
  errorsPerS: number;
  /** Errors per second by response code. */
  errorsByCode: Record<string, number>;
  /** Latency quantiles of the requests between the two samples; null when there were none. */
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface NodeRate {
  id: number;
  /** The later sample's time on the node's clock. */
  atMs: number;
  opsPerS: number;
  errorsPerS: number;
  operations: OperationRate[];
}

function key(protocol: string, route: string): string {
  return `${protocol} ${route}`;
}

/**
 * The `q` quantile (0..1) of the observations between two cumulative histograms, in
 * milliseconds, interpolated linearly inside the bucket that holds it. Beyond the last
 * finite bucket, that bucket's bound is the answer (nothing better is known).
 */
export function quantileMs(before: Histogram | undefined, after: Histogram, q: number): number | null {
  const count = after.count - (before?.count ?? 0);
  if (count <= 0) return null;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const bucket of after.buckets) {
    const earlier = before?.buckets.find((b) => b.le === bucket.le)?.count ?? 0;
    const cumulative = bucket.count - earlier;
    if (cumulative >= rank) {
      const inBucket = cumulative - lowerCount;
      const fraction = inBucket > 0 ? (rank - lowerCount) / inBucket : 1;
      return (lowerBound + (bucket.le - lowerBound) * fraction) * 1000;
    }
    lowerBound = bucket.le;
    lowerCount = cumulative;
  }
  return lowerBound * 1000;
}

/** Rates of one node between two of its samples; null when either lacks numbers or time did not advance. */
export function nodeRate(before: MemberStats, after: MemberStats): NodeRate | null {
  if (!before.stats || !after.stats || after.at_ms <= before.at_ms) return null;
  const seconds = (after.at_ms - before.at_ms) / 1000;
  const earlier = new Map<string, number>();
  for (const r of before.stats.api.requests) earlier.set(`${key(r.protocol, r.route)} ${r.code}`, r.count);

  const operations = new Map<string, OperationRate>();
  const add = (r: RequestCount) => {
    if (!isClientOperation(r.protocol, r.route)) return;
    // A counter that went down means the node restarted: its new total is all new.
    const previous = earlier.get(`${key(r.protocol, r.route)} ${r.code}`) ?? 0;
    const delta = r.count >= previous ? r.count - previous : r.count;
    if (delta === 0) return;
    const name = key(r.protocol, r.route);
    const op = operations.get(name) ?? {
      operation: name,
      opsPerS: 0,
      errorsPerS: 0,
      errorsByCode: {},
      p50Ms: null,
      p99Ms: null,
    };
    op.opsPerS += delta / seconds;
    if (isErrorCode(r.protocol, r.route, r.code)) {
      op.errorsPerS += delta / seconds;
      op.errorsByCode[r.code] = (op.errorsByCode[r.code] ?? 0) + delta / seconds;
    }
    operations.set(name, op);
  };
  after.stats.api.requests.forEach(add);

  for (const latency of after.stats.api.latency) {
    const op = operations.get(key(latency.protocol, latency.route));
    if (!op) continue;
    const prior = before.stats.api.latency.find((l) => l.protocol === latency.protocol && l.route === latency.route);
    const restarted = prior !== undefined && prior.seconds.count > latency.seconds.count;
    op.p50Ms = quantileMs(restarted ? undefined : prior?.seconds, latency.seconds, 0.5);
    op.p99Ms = quantileMs(restarted ? undefined : prior?.seconds, latency.seconds, 0.99);
  }

  const list = [...operations.values()].sort((a, b) => b.opsPerS - a.opsPerS);
  return {
    id: after.id,
    atMs: after.at_ms,
    opsPerS: list.reduce((sum, op) => sum + op.opsPerS, 0),
    errorsPerS: list.reduce((sum, op) => sum + op.errorsPerS, 0),
    operations: list,
  };
}
