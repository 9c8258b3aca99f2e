import type { RaftEvent } from '../../../api/types';
import { formatClock } from '../../../lib/format';
import styles from './RaftEventList.module.css';

function describe(event: RaftEvent): string {
  switch (event.kind) {
    case 'leader_changed':
      return event.leader_id === 0 ? 'Leader lost' : `Node ${event.leader_id} elected leader`;
    case 'role_changed':
      return `Node ${event.node_id} became ${event.role}`;
    case 'term_changed':
      return `Node ${event.node_id} moved to term ${event.term}`;
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
