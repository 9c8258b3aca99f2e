import type { MemberStats } from '../../../api/types';
import { lastData, failoverFrames } from '../../../test/recorded';
import type { ClusterStats } from '../../../api/types';
import { verdictOf } from './CanaryPanel';

describe('verdictOf', () => {
  it('lets one violated window outweigh every linearizable one', () => {
    // Proves the order of verdicts on a recorded member whose windows were all fine,
    // then the same member with one window found not linearizable.
    const stats = lastData(failoverFrames, 'stats') as ClusterStats;
    const member = stats.nodes.find((m) => m.id === 1) as MemberStats & { stats: NonNullable<MemberStats['stats']> };
    expect(verdictOf(member)).toBe('ok');
    const violated = { ...member, stats: { ...member.stats, canary: { ...member.stats.canary, windows_violation: 1 } } };
    expect(verdictOf(violated)).toBe('violation');
    expect(verdictOf({ ...member, stats: null })).toBe('unknown');
  });
});
