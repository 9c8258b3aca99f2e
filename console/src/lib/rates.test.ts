import { failoverFrames, lastData } from '../test/recorded';
import type { ClusterStats } from '../api/types';
import type { StatsSample } from './statsStream';
import { latestRate, nodeSeries, ratePerSecond } from './rates';

function samples(): StatsSample[] {
  return failoverFrames
    .filter((f) => f.event === 'stats')
    .map((f) => ({ receivedAtMs: f.receivedAtMs, stats: f.data as ClusterStats }));
}

describe('rates', () => {
  it('turns a member’s counters in two recorded frames into a rate on the member’s own clock', () => {
    // Proves the series skips frames where the member could not be asked (node 3 after its
    // kill) and the rate divides the counter's growth by the member's own time between.
    const all = samples();
    expect(nodeSeries(all, 3).length).toBeLessThan(nodeSeries(all, 1).length);
    const points = nodeSeries(all, 1);
    const [before, after] = points.slice(-2);
    if (!before || !after) throw new Error('two frames expected');
    const applied = (s: typeof before.stats) => s.raft.applied_entries;
    const want = ((applied(after.stats) - applied(before.stats)) * 1000) / (after.atMs - before.atMs);
    expect(latestRate(points, applied)).toBeCloseTo(want, 6);
  });

  it('gives no rate when a counter fell (a restart) or no time passed', () => {
    // Proves a restarted node's counters never show as a negative rate.
    const stats = (lastData(failoverFrames, 'stats') as ClusterStats).nodes[0]?.stats;
    if (!stats) throw new Error('node 1 has stats');
    const fell = { atMs: 2_000, stats: { ...stats, raft: { ...stats.raft, applied_entries: 0 } } };
    expect(ratePerSecond({ atMs: 1_000, stats }, fell, (s) => s.raft.applied_entries)).toBeNull();
    expect(ratePerSecond({ atMs: 1_000, stats }, { atMs: 1_000, stats }, (s) => s.raft.applied_entries)).toBeNull();
  });
});
