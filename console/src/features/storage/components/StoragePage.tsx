import { LiveIndicator } from '../../../components/LiveIndicator';
import { Panel } from '../../../components/Panel';
import { formatClock } from '../../../lib/format';
import { useStatsStream, type StatsStreamOptions } from '../../../lib/useStatsStream';
import { compactionSeries } from '../hooks/compactionSeries';
import { CompactionChart } from './CompactionChart';
import { NodeStorage } from './NodeStorage';
import page from '../../../components/Page.module.css';
import styles from './StoragePage.module.css';

interface StoragePageProps {
  /** Tests shorten the stream's timings; the app uses the defaults. */
  stream?: StatsStreamOptions;
}

/** Every node's storage engine, live from the `stats` frames of the event stream. */
export function StoragePage({ stream }: StoragePageProps) {
  const live = useStatsStream(stream);
  const latest = live.samples.at(-1);
  const members = latest ? [...latest.stats.nodes].sort((a, b) => a.id - b.id) : [];
  const ids = members.map((m) => m.id);
  const points = compactionSeries(live.samples, ids);
  return (
    <div className={page.page}>
      <div className={page.titleRow}>
        <h1 className={page.title}>Storage</h1>
        <LiveIndicator state={live.stream} detail={live.stream === 'reconnecting' ? live.streamError : null} />
      </div>
      {!latest ? (
        <p className={styles.placeholder}>
          {live.stream === 'reconnecting'
            ? 'The cluster event stream is unavailable; retrying.'
            : 'Waiting for the first stats from the nodes (about a second)…'}
        </p>
      ) : (
        <>
          <Panel title="Compaction bytes written" aside={`per second · updated ${formatClock(latest.receivedAtMs)}`}>
            <CompactionChart points={points} nodeIds={ids} />
          </Panel>
          <div
            className={`${styles.nodes} ${live.stream === 'live' ? '' : styles.stale}`}
            data-testid="storage-nodes"
            data-received-at={latest.receivedAtMs}
            data-answered-by={latest.stats.answered_by}
          >
            {members.map((m) => (
              <NodeStorage key={m.id} member={m} />
            ))}
          </div>
        </>
      )}
    </div>
  );
}
