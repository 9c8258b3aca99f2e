import type { ClusterStatus, NodeStatus } from '../../../api/types';

/**
 * The node to highlight as leader: one that reports itself leader in the highest term
 * any node reports. An old leader cut off from the others can still claim leadership
 * in an older term for a while; it is not the leader the cluster follows.
 */
export function currentLeader(status: ClusterStatus): NodeStatus | null {
  const highestTerm = status.nodes.reduce((max, node) => Math.max(max, node.term), 0);
  return status.nodes.find((node) => node.role === 'leader' && node.term === highestTerm) ?? null;
}
