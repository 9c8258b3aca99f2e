import type { RaftEvent } from '../api/types';
import { eras } from './terms';

function event(overrides: Partial<RaftEvent>): RaftEvent {
  return {
    kind: 'leader_changed',
    node_id: 1,
    term: 1,
    leader_id: 0,
    role: 'follower',
    at_ms: 0,
    duration_ms: 0,
    detail: '',
    ...overrides,
  };
}

describe('eras', () => {
  it('starts each leader at the first report, ends it at the next, and times the gap from the first loss', () => {
    // Proves the reconstruction on a hand-over: node 2 leads term 2 from its first report,
    // node 3 takes over after a transfer; the leaderless window runs from the first member
    // that followed node 2 losing it (not from a node that started meanwhile and stood
    // before it knew any leader, nor from a loss after which node 2 was heard again) to
    // the first report of node 3, and the election is the one node 3 started.
    const events = [
      event({ node_id: 1, term: 2, leader_id: 2, at_ms: 1_000 }),
      event({ node_id: 2, term: 2, leader_id: 2, at_ms: 990, kind: 'role_changed', role: 'leader' }),
      // Node 4 just started and knows no leader: its election is no sign node 2 is gone.
      event({
        node_id: 4,
        term: 2,
        at_ms: 3_000,
        kind: 'election_started',
        role: 'candidate',
        election: { reason: 'timeout', pre_vote: true },
      }),
      event({ node_id: 4, term: 2, leader_id: 2, at_ms: 3_100 }),
      // Node 1's timer runs out while node 2 still leads; it hears from node 2 again.
      event({ node_id: 1, term: 2, leader_id: 0, at_ms: 4_000 }),
      event({ node_id: 1, term: 2, leader_id: 2, at_ms: 4_050 }),
      event({ node_id: 1, term: 2, leader_id: 0, at_ms: 5_000 }),
      event({
        node_id: 3,
        term: 2,
        at_ms: 5_010,
        kind: 'election_started',
        role: 'candidate',
        election: { reason: 'transfer', pre_vote: false },
      }),
      event({ node_id: 3, term: 3, leader_id: 3, at_ms: 5_040, kind: 'role_changed', role: 'leader' }),
      event({ node_id: 1, term: 3, leader_id: 3, at_ms: 5_060 }),
    ];
    const [first, second] = eras(events);
    expect(first).toMatchObject({ term: 2, leaderId: 2, startMs: 990, endMs: 5_040 });
    expect(second).toMatchObject({
      term: 3,
      leaderId: 3,
      startMs: 5_040,
      endMs: null,
      leaderlessMs: 40,
      election: { nodeId: 3, reason: 'transfer', preVote: false },
    });
  });
});
