import type { StatsSample } from './statsStream';

/** A time span, `[fromMs, toMs]`. */
export interface Span {
  fromMs: number;
  toMs: number;
}

/** What the gateway answered 503 and 504 between two stats frames. */
export interface GatewayBucket {
  fromMs: number;
  toMs: number;
  unavailable: number;
  timedOut: number;
}

function count(sample: StatsSample, code: string): number | null {
  const g = sample.stats.gateway;
  if (!g || g.error || g.at_ms === 0) return null;
  return g.responses.find((r) => r.code === code)?.count ?? 0;
}

/**
 * The gateway's 503 and 504 answers per interval between consecutive `stats` frames,
 * from Envoy's counters the frames carry (the browser turns the totals into counts per
 * interval); an interval where the counters fell (Envoy restarted) or were missing is left out.
 */
export function gatewayBuckets(samples: readonly StatsSample[]): GatewayBucket[] {
  const buckets: GatewayBucket[] = [];
  for (let i = 1; i < samples.length; i++) {
    const before = samples[i - 1];
    const after = samples[i];
    if (!before || !after) continue;
    const b503 = count(before, '503');
    const a503 = count(after, '503');
    const b504 = count(before, '504');
    const a504 = count(after, '504');
    if (b503 === null || a503 === null || b504 === null || a504 === null) continue;
    if (a503 < b503 || a504 < b504) continue;
    buckets.push({
      fromMs: before.stats.gateway?.at_ms ?? before.receivedAtMs,
      toMs: after.stats.gateway?.at_ms ?? after.receivedAtMs,
      unavailable: a503 - b503,
      timedOut: a504 - b504,
    });
  }
  return buckets;
}

/** The span of the intervals in `window` where the gateway answered 503 or 504, and how many. */
export function failoverAsTheGatewaySawIt(buckets: readonly GatewayBucket[], window: Span) {
  const bad = buckets.filter((b) => b.toMs >= window.fromMs && b.fromMs <= window.toMs && b.unavailable + b.timedOut > 0);
  const first = bad[0];
  const last = bad.at(-1);
  if (!first || !last) return null;
  return {
    fromMs: first.fromMs,
    toMs: last.toMs,
    unavailable: bad.reduce((n, b) => n + b.unavailable, 0),
    timedOut: bad.reduce((n, b) => n + b.timedOut, 0),
  };
}

