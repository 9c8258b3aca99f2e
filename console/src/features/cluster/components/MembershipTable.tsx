import type { ClusterStatus, NodeRole, NodeStatus } from '../../../api/types';
import { Pill, type PillTone } from '../../../components/Pill';
import { formatCount } from '../../../lib/format';
import { currentLeader } from './leadership';
import styles from './MembershipTable.module.css';

const ROLE_TONE: Record<NodeRole, PillTone> = {
  leader: 'accent',
  follower: 'neutral',
  candidate: 'warn',
  learner: 'neutral',
  unknown: 'bad',
};

interface MembershipTableProps {
  status: ClusterStatus;
}

/**
 * One row per node as it reports itself. Rows are `data-testid="node-row-<id>"`
 * with `data-role`, `data-leader` and `data-healthy`, so browser tests need no CSS.
 */
export function MembershipTable({ status }: MembershipTableProps) {
  const leader = currentLeader(status);
  const nodes = [...status.nodes].sort((a, b) => a.id - b.id);
  return (
    <div className={styles.scroll}>
      <table className={styles.table} aria-label="Cluster members">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Address</th>
            <th scope="col">Role</th>
            <th scope="col" className={styles.num}>
              Term
            </th>
            <th scope="col" className={styles.num}>
              Commit index
            </th>
            <th scope="col" className={styles.num}>
              Applied index
            </th>
            <th scope="col">Health</th>
          </tr>
        </thead>
        <tbody>
          {nodes.map((node) => (
            <NodeRow
              key={node.id}
              node={node}
              isLeader={leader?.id === node.id}
              leaderCommitIndex={leader?.commit_index ?? null}
            />
          ))}
        </tbody>
      </table>
      {nodes.length === 0 && <p className={styles.empty}>The cluster reported no members.</p>}
    </div>
  );
}

interface NodeRowProps {
  node: NodeStatus;
  isLeader: boolean;
  leaderCommitIndex: number | null;
}

function NodeRow({ node, isLeader, leaderCommitIndex }: NodeRowProps) {
  // A node claiming leadership that is not the current leader is a stale leader.
  const staleLeader = node.role === 'leader' && !isLeader;
  const behind =
    leaderCommitIndex !== null && node.healthy ? Math.max(0, leaderCommitIndex - node.applied_index) : 0;
  // A learner is a member joining the cluster: it receives the log but does not vote
  // until promoted, which is safe once it has caught up.
  const joining =
    node.role !== 'learner' ? null : behind > 0 ? `joining: ${formatCount(behind)} behind` : 'caught up: ready to promote';
  // A node whose log was created empty (a new or replaced disk) does not vote until
  // the leader has vouched that it holds everything it acknowledged before.
  const unproven = node.healthy && !node.proven && node.role !== 'learner';
  const rowClass = [styles.row, isLeader && styles.leader, !node.healthy && styles.unhealthy]
    .filter(Boolean)
    .join(' ');
  return (
    <tr
      className={rowClass}
      data-testid={`node-row-${node.id}`}
      data-role={node.role}
      data-leader={isLeader}
      data-healthy={node.healthy}
      aria-current={isLeader ? 'true' : undefined}
    >
      <th scope="row" className={styles.id}>
        {isLeader && (
          <span className={styles.crown} aria-hidden="true">
            ★
          </span>
        )}
        node {node.id}
      </th>
      <td className={styles.address}>{node.address}</td>
      <td data-testid={`node-role-${node.id}`}>
        <Pill tone={staleLeader ? 'warn' : ROLE_TONE[node.role]}>
          {node.role}
          {staleLeader && ' (stale term)'}
        </Pill>
        {joining && (
          <div className={styles.joining} data-testid={`node-joining-${node.id}`}>
            {joining}
          </div>
        )}
        {unproven && (
          <div className={styles.joining} data-testid={`node-unproven-${node.id}`}>
            new disk: not voting until the leader vouches for it
          </div>
        )}
        {node.leaving && (
          <div className={styles.joining} data-testid={`node-leaving-${node.id}`}>
            leaving: a change is removing it; it votes until the group leaves the joint configuration
          </div>
        )}
      </td>
      <td className={styles.num}>{formatCount(node.term)}</td>
      <td className={styles.num}>{formatCount(node.commit_index)}</td>
      <td className={styles.num}>
        {formatCount(node.applied_index)}
        {behind > 0 && (
          <span className={styles.behind} title={`${behind} entries behind the leader's commit index`}>
            −{formatCount(behind)}
          </span>
        )}
      </td>
      <td>
        <Pill tone={node.healthy ? 'good' : 'bad'} testId={`node-health-${node.id}`}>
          {node.healthy ? 'healthy' : 'unhealthy'}
        </Pill>
        {!node.healthy && node.error && (
          <div className={styles.error} data-testid={`node-error-${node.id}`}>
            {node.error}
          </div>
        )}
      </td>
    </tr>
  );
}
