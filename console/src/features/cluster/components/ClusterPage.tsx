import { LiveIndicator } from '../../../components/LiveIndicator';
import { Panel } from '../../../components/Panel';
import { formatClock } from '../../../lib/format';
import { useClusterEvents, type ClusterEventsOptions } from '../hooks/useClusterEvents';
import { ClusterSummary } from './ClusterSummary';
import page from '../../../components/Page.module.css';
import styles from './ClusterPage.module.css';
import { CanaryPanel } from './CanaryPanel';
import { MembershipTable } from './MembershipTable';
import { NodeDetails } from './NodeDetails';
import { RaftEventList } from './RaftEventList';
import { RangeActivity } from './RangeActivity';
import { RangesTable } from './RangesTable';

interface ClusterPageProps {
  /** Tests shorten the reconnect and silence timings; the app uses the defaults. */
  events?: ClusterEventsOptions;
}

/** Live membership: who leads, every node's raft position and health, recent elections. */
export function ClusterPage({ events }: ClusterPageProps) {
  const live = useClusterEvents(events);
  const { status } = live;

  let updated = 'waiting for the first status…';
  if (live.statusReceivedAtMs !== null) {
    updated = `${live.statusSource === 'snapshot' ? 'snapshot' : 'updated'} ${formatClock(live.statusReceivedAtMs)}`;
  }

  return (
    <div className={page.page}>
      <div className={page.titleRow}>
        <h1 className={page.title}>Cluster</h1>
        <LiveIndicator state={live.stream} detail={live.stream === 'reconnecting' ? live.streamError : null} />
      </div>

      {status ? (
        <div className={live.stream === 'live' ? '' : styles.stale}>
          <ClusterSummary status={status} />
        </div>
      ) : (
        <p className={styles.placeholder}>
          {live.stream === 'reconnecting'
            ? 'The cluster event stream is unavailable; retrying.'
            : 'Connecting to the cluster event stream…'}
        </p>
      )}

      <div className={styles.columns}>
        <Panel
          title="Members"
          aside={
            <span data-testid="status-updated" className={live.stream === 'live' ? '' : styles.staleNote}>
              {updated}
            </span>
          }
        >
          {status ? (
            <div className={live.stream === 'live' ? '' : styles.stale}>
              <MembershipTable status={status} />
            </div>
          ) : (
            <p className={styles.placeholder}>No status yet.</p>
          )}
        </Panel>

        <Panel title="Raft events" aside={live.raftEvents.length > 0 ? `last ${live.raftEvents.length}` : undefined}>
          <RaftEventList events={live.raftEvents} />
        </Panel>
      </div>

      <Panel title="Ranges" aside="the keys each raft group serves, and who leads it">
        {status ? (
          <div className={live.stream === 'live' ? '' : styles.stale}>
            <RangesTable status={status} />
          </div>
        ) : (
          <p className={styles.placeholder}>No status yet.</p>
        )}
      </Panel>

      <Panel
        title="Range activity"
        aside={live.rangeEvents.length > 0 ? `last ${live.rangeEvents.length}` : 'splits and range leaders'}
      >
        <RangeActivity events={live.rangeEvents} />
      </Panel>

      <Panel title="Replication and nodes" aside="from the nodes' stats, about every second">
        {status && live.stats ? (
          <div className={live.stream === 'live' ? '' : styles.stale}>
            <NodeDetails status={status} stats={live.stats} />
          </div>
        ) : (
          <p className={styles.placeholder}>Waiting for the first stats from the nodes (about a second)…</p>
        )}
      </Panel>

      <Panel title="Consistency canary" aside="each node checks its own reads and writes for linearizability">
        {live.stats ? (
          <CanaryPanel stats={live.stats} />
        ) : (
          <p className={styles.placeholder}>Waiting for the first stats from the nodes…</p>
        )}
      </Panel>
    </div>
  );
}
