import type { ClusterStatus } from '../../../api/types';
import { formatCount } from '../../../lib/format';
import { currentLeader } from './leadership';
import styles from './ClusterSummary.module.css';

interface ClusterSummaryProps {
  status: ClusterStatus;
}

/** The facts an operator looks for first: who leads, in which term (and cluster), how many are up. */
export function ClusterSummary({ status }: ClusterSummaryProps) {
  const leader = currentLeader(status);
  const healthy = status.nodes.filter((node) => node.healthy).length;
  const term = status.nodes.reduce((max, node) => Math.max(max, node.term), status.term);
  const allHealthy = healthy === status.nodes.length;
  return (
    <dl className={styles.summary}>
      <div className={`${styles.fact} ${leader ? '' : styles.alert}`}>
        <dt>Leader</dt>
        <dd data-testid="cluster-leader">
          {leader ? `node ${leader.id}` : 'none'}
          {leader && <span className={styles.sub}>{leader.address}</span>}
          {!leader && <span className={styles.sub}>election in progress or no quorum</span>}
        </dd>
      </div>
      <div className={styles.fact}>
        <dt>Term</dt>
        <dd data-testid="cluster-term">
          {formatCount(term)}
          <span className={styles.sub} data-testid="cluster-id" title="The cluster's id, drawn by its first leader">
            {status.cluster_id ? `cluster ${status.cluster_id}` : 'cluster not named yet'}
          </span>
        </dd>
      </div>
      <div className={`${styles.fact} ${allHealthy ? '' : styles.alert}`}>
        <dt>Healthy nodes</dt>
        <dd data-testid="cluster-healthy">
          {healthy} / {status.nodes.length}
        </dd>
      </div>
    </dl>
  );
}
