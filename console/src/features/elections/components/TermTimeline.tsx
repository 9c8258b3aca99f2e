import { formatClock, formatDurationMs } from '../../../lib/format';
import { REASON_LABEL, type Era } from '../../../lib/terms';
import styles from './ElectionsPage.module.css';

const COLOURS = ['#2f6fe0', '#14733e', '#6b3fa0', '#0f7c8c', '#8a5300', '#b3407a'];

interface TermTimelineProps {
  eras: readonly Era[];
  nowMs: number;
}

/**
 * The terms on one time axis: a bar per leader's time in office, coloured by leader,
 * and a red gap for each leaderless window (never thinner than a few pixels, so a
 * 30 ms failover in an hour's history still shows).
 */
export function TermTimeline({ eras, nowMs }: TermTimelineProps) {
  const first = eras[0];
  if (!first) return <p className={styles.placeholder}>No leader has been elected in what the members remember.</p>;
  const from = Math.min(first.leaderlessFromMs ?? first.startMs, first.startMs);
  const span = Math.max(1, nowMs - from);
  const pct = (ms: number) => `${(((ms - from) / span) * 100).toFixed(3)}%`;
  const width = (a: number, b: number) => `${(((b - a) / span) * 100).toFixed(3)}%`;
  const leaders = [...new Set(eras.map((e) => e.leaderId))].sort((a, b) => a - b);
  const colour = (id: number) => COLOURS[leaders.indexOf(id) % COLOURS.length];
  return (
    <figure className={styles.timeline} aria-label="Leaders over time">
      <div className={styles.track} data-testid="term-timeline">
        {eras.map((era) => (
          <div key={`${era.term}-${era.leaderId}`}>
            {era.leaderlessFromMs !== null && (
              <div
                className={styles.gap}
                style={{ left: pct(era.leaderlessFromMs), width: width(era.leaderlessFromMs, era.startMs) }}
                title={`no leader for ${formatDurationMs(era.leaderlessMs ?? 0)} before term ${era.term}`}
                data-testid="timeline-gap"
              />
            )}
            <div
              className={styles.era}
              style={{
                left: pct(era.startMs),
                width: width(era.startMs, era.endMs ?? nowMs),
                background: colour(era.leaderId),
              }}
              title={`term ${era.term}: node ${era.leaderId} led from ${formatClock(era.startMs)}${
                era.election?.reason ? ` (${REASON_LABEL[era.election.reason]})` : ''
              }`}
              data-testid="timeline-era"
              data-term={era.term}
              data-leader={era.leaderId}
            >
              <span className={styles.eraLabel}>
                n{era.leaderId} · t{era.term}
              </span>
            </div>
          </div>
        ))}
      </div>
      <figcaption className={styles.axis}>
        <span>{formatClock(from)}</span>
        <span className={styles.legend}>
          {leaders.map((id) => (
            <span key={id}>
              <span className={styles.swatch} style={{ background: colour(id) }} /> node {id}
            </span>
          ))}
          <span>
            <span className={`${styles.swatch} ${styles.gapSwatch}`} /> no leader
          </span>
        </span>
        <span>{formatClock(nowMs)}</span>
      </figcaption>
    </figure>
  );
}
