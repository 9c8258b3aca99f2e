import type { RangeEvent } from '../../../api/types';
import { formatClock } from '../../../lib/format';
import styles from './RaftEventList.module.css';

/** A bound of a split range as text: its key, or what an empty bound means. */
function bound(event: RangeEvent, key: string, empty: string): string {
  if (key === '') return empty;
  return event.encoding === 'base64' ? `base64 ${key}` : key;
}

function describe(event: RangeEvent): string {
  switch (event.kind) {
    case 'split': {
      const from = event.parent === 0 ? '' : ` off range ${event.parent}`;
      const keys = `${bound(event, event.start, 'first key')} → ${bound(event, event.end, 'last key')}`;
      return `Range ${event.range} split${from}: serves ${keys}`;
    }
    case 'leader_changed':
      return `Node ${event.leader_id} leads range ${event.range}`;
  }
}

interface RangeActivityProps {
  /** Oldest first, as kept in state; shown newest first. */
  events: readonly RangeEvent[];
}

/**
 * Splits and range leaders as they happen (SSE `range`), newest first. Items are
 * `data-testid="range-event"` with `data-kind` and `data-range`.
 */
export function RangeActivity({ events }: RangeActivityProps) {
  if (events.length === 0) {
    return <p className={styles.empty}>No splits or range leader changes seen since the page opened.</p>;
  }
  const newestFirst = [...events].reverse();
  return (
    <ol className={styles.list} aria-label="Range activity">
      {newestFirst.map((event) => (
        <li
          key={`${event.at_ms}-${event.node_id}-${event.kind}-${event.range}-${event.term}-${event.leader_id}`}
          className={`${styles.item} ${event.kind === 'split' ? styles.leaderChange : ''}`}
          data-testid="range-event"
          data-kind={event.kind}
          data-range={event.range}
        >
          <time className={styles.time} dateTime={new Date(event.at_ms).toISOString()}>
            {formatClock(event.at_ms)}
          </time>
          <span className={styles.what}>{describe(event)}</span>
          <span className={styles.meta}>
            {event.kind === 'leader_changed' ? `term ${event.term} · ` : ''}reported by node {event.node_id}
          </span>
        </li>
      ))}
    </ol>
  );
}
