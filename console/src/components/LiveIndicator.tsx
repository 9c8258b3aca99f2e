import styles from './LiveIndicator.module.css';

export type LiveState = 'connecting' | 'live' | 'reconnecting';

const LABELS: Record<LiveState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
};

interface LiveIndicatorProps {
  state: LiveState;
  /** Extra words after the label, e.g. why the stream was lost. */
  detail?: string | null;
}

/**
 * The state of a live feed, announced politely to screen readers when it changes.
 * Browser tests find it by `data-testid="stream-status"` and read `data-state`.
 */
export function LiveIndicator({ state, detail }: LiveIndicatorProps) {
  return (
    <div
      role="status"
      aria-live="polite"
      className={`${styles.indicator} ${styles[state]}`}
      data-testid="stream-status"
      data-state={state}
    >
      <span className={styles.dot} aria-hidden="true" />
      <span className={styles.label}>{LABELS[state]}</span>
      {detail && <span className={styles.detail}>({detail})</span>}
    </div>
  );
}
