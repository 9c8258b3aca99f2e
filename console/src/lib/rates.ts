import type { NodeStats } from '../api/types';
import type { StatsSample } from './statsStream';

/** One member's numbers at one moment (the node's own clock). */
export interface NodePoint {
  atMs: number;
  stats: NodeStats;
}

/** Member `id`'s numbers in every sample that has them, oldest first. */
export function nodeSeries(samples: readonly StatsSample[], id: number): NodePoint[] {
  const points: NodePoint[] = [];
  for (const sample of samples) {
    const member = sample.stats.nodes.find((n) => n.id === id);
    if (member?.stats && member.at_ms > 0 && (points.at(-1)?.atMs ?? -1) < member.at_ms) {
      points.push({ atMs: member.at_ms, stats: member.stats });
    }
  }
  return points;
}

/**
 * A counter's rate per second between two points, or null when it cannot be told:
 * no time passed, or the counter fell (the node restarted and counts from zero again).
 */
export function ratePerSecond(before: NodePoint, after: NodePoint, counter: (s: NodeStats) => number): number | null {
  const seconds = (after.atMs - before.atMs) / 1000;
  const delta = counter(after.stats) - counter(before.stats);
  if (seconds <= 0 || delta < 0) return null;
  return delta / seconds;
}

/** The rate over the last two points of a series, or null. */
export function latestRate(points: readonly NodePoint[], counter: (s: NodeStats) => number): number | null {
  const after = points.at(-1);
  const before = points.at(-2);
  return before && after ? ratePerSecond(before, after, counter) : null;
}
