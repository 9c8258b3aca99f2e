import { nodeSeries, ratePerSecond } from '../../../lib/rates';
import type { StatsSample } from '../../../lib/statsStream';

/** One moment of the chart: for each node, compaction bytes written per second since the sample before. */
export interface CompactionPoint {
  atMs: number;
  [node: `node${number}`]: number | null;
}

/**
 * Compaction throughput over time, per node, from the counter every `stats` frame
 * carries (`strata_engine_compaction_written_bytes_total`): the browser turns each
 * pair of samples into a rate. Points are keyed by the node's own clock, rounded to
 * the second so the nodes' samples of one frame line up.
 */
export function compactionSeries(samples: readonly StatsSample[], nodeIds: readonly number[]): CompactionPoint[] {
  const bySecond = new Map<number, CompactionPoint>();
  for (const id of nodeIds) {
    const points = nodeSeries(samples, id);
    for (let i = 1; i < points.length; i++) {
      const before = points[i - 1];
      const after = points[i];
      if (!before || !after) continue;
      const rate = ratePerSecond(before, after, (s) => s.engine.compaction_written_bytes);
      const second = Math.round(after.atMs / 1000) * 1000;
      const point = bySecond.get(second) ?? { atMs: second };
      point[`node${id}`] = rate;
      bySecond.set(second, point);
    }
  }
  return [...bySecond.values()].sort((a, b) => a.atMs - b.atMs);
}
