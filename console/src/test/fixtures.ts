import type { ClusterStatus, NodeStatus, RaftEvent } from '../api/types';

/** The cluster id the fixtures' nodes report. */
export const CLUSTER_ID = '5f3a9c0d1e2b4a68';

/** A healthy three-node cluster led by `leaderId` in `term`, every node caught up. */
export function clusterStatus(leaderId: number, term = 3, overrides: Partial<Record<number, Partial<NodeStatus>>> = {}): ClusterStatus {
  const nodes: NodeStatus[] = [1, 2, 3].map((id) => ({
    id,
    address: `127.0.0.1:700${id}`,
    role: id === leaderId ? 'leader' : 'follower',
    term,
    commit_index: 42,
    applied_index: 42,
    healthy: true,
    leader_id: leaderId,
    proven: true,
    leaving: false,
    cluster_id: CLUSTER_ID,
    ...overrides[id],
  }));
  const ranges = [
    { id: 1, start: '', end: '', encoding: 'utf8' as const, voters: [1, 2, 3], learners: [], leader_id: leaderId, term },
  ];
  return { leader_id: leaderId, term, cluster_id: CLUSTER_ID, nodes, ranges };
}

export function raftEvent(overrides: Partial<RaftEvent> = {}): RaftEvent {
  return {
    kind: 'leader_changed',
    node_id: 1,
    term: 4,
    leader_id: 2,
    role: 'follower',
    at_ms: 1_700_000_000_000,
    duration_ms: 0,
    detail: '',
    ...overrides,
  };
}
