import type { RaftEvent } from '../../../api/types';
import { formatClock } from '../../../lib/format';
import styles from './RaftEventList.module.css';

function describe(event: RaftEvent): string {
  switch (event.kind) {
    case 'leader_changed':
      if (event.leader_id === 0) return 'Leader lost';
      return event.duration_ms > 0
        ? `Node ${event.leader_id} elected leader after ${event.duration_ms} ms`
        : `Node ${event.leader_id} is leader`;
    case 'role_changed':
      return `Node ${event.node_id} became ${event.role}`;
    case 'election_started':
      return `Node ${event.node_id} started an election`;
    case 'membership_changed':
      return `Membership changed: ${event.detail}`;
    case 'snapshot_sent':
      return `Node ${event.node_id} sent a snapshot ${event.detail}`;
    case 'snapshot_received':
      return `Node ${event.node_id} received a snapshot (${event.detail})`;
    case 'snapshot_installed':
      return `Node ${event.node_id} installed a snapshot (${event.detail})`;
    case 'storage_failed':
      return `Node ${event.node_id} storage failed: ${event.detail}`;
  }
}

interface RaftEventListProps {
  /** Oldest first, as kept in state; shown newest first. */
  events: readonly RaftEvent[];
}

export function RaftEventList({ events }: RaftEventListProps) {
  if (events.length === 0) {
    return <p className={styles.empty}>No elections or leader changes seen since the page opened.</p>;
  }
  const newestFirst = [...events].reverse();
  return (
    <ol className={styles.list} aria-label="Recent raft events">
      {newestFirst.map((event) => (
        <li
          key={`${event.at_ms}-${event.node_id}-${event.kind}-${event.term}-${event.leader_id}-${event.role}`}
          className={`${styles.item} ${event.kind === 'leader_changed' ? styles.leaderChange : ''}`}
          data-testid="raft-event"
          data-kind={event.kind}
        >
          <time className={styles.time} dateTime={new Date(event.at_ms).toISOString()}>
            {formatClock(event.at_ms)}
          </time>
          <span className={styles.what}>{describe(event)}</span>
          <span className={styles.meta}>
            term {event.term} · reported by node {event.node_id}
          </span>
        </li>
      ))}
    </ol>
  );
}
