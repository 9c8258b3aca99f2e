import type { ClusterStats } from '../../../api/types';
import { LiveIndicator } from '../../../components/LiveIndicator';
import { Panel } from '../../../components/Panel';
import { Pill } from '../../../components/Pill';
import { formatClock, formatCount, formatDurationMs } from '../../../lib/format';
import { failoverAsTheGatewaySawIt, gatewayBuckets } from '../../../lib/gateway';
import { useStatsStream, type StatsStreamOptions } from '../../../lib/useStatsStream';
import { eras, mergeEvents, REASON_LABEL, type Era } from '../../../lib/terms';
import page from '../../../components/Page.module.css';
import styles from './ElectionsPage.module.css';
import { TermTimeline } from './TermTimeline';

interface ElectionsPageProps {
  /** Tests shorten the stream's timings; the app uses the defaults. */
  stream?: StatsStreamOptions;
  /** The time the timeline ends at; the latest frame's arrival when absent. */
  nowMs?: number;
}

/** Elections counted by every member, by why each started (`strata_raft_elections_total`). */
function electionCounts(stats: ClusterStats | undefined): Map<string, number> {
  const counts = new Map<string, number>();
  for (const member of stats?.nodes ?? []) {
    for (const e of member.stats?.raft.elections ?? []) counts.set(e.reason, (counts.get(e.reason) ?? 0) + e.count);
  }
  return counts;
}

/** Who led when, why each election started, how long the cluster had no leader. */
export function ElectionsPage({ stream, nowMs }: ElectionsPageProps) {
  const live = useStatsStream(stream);
  const stats = live.samples.at(-1)?.stats;
  const status = live.statuses.at(-1)?.status;
  const events = mergeEvents(stats, live.raftEvents);
  const terms = eras(events);
  const lastFailover = [...terms].reverse().find((e) => e.leaderlessMs !== null && e.election !== null);
  const latestArrival = Math.max(live.samples.at(-1)?.receivedAtMs ?? 0, live.statuses.at(-1)?.receivedAtMs ?? 0);
  const end = nowMs ?? Math.max(latestArrival, events.at(-1)?.at_ms ?? 0);
  const counts = electionCounts(stats);
  const gateway =
    lastFailover && lastFailover.leaderlessFromMs !== null
      ? failoverAsTheGatewaySawIt(gatewayBuckets(live.samples), {
          fromMs: lastFailover.leaderlessFromMs - 3000,
          toMs: lastFailover.startMs + 5000,
        })
      : null;
  return (
    <div className={page.page}>
      <div className={page.titleRow}>
        <h1 className={page.title}>Elections</h1>
        <LiveIndicator state={live.stream} detail={live.stream === 'reconnecting' ? live.streamError : null} />
      </div>

      {!status && !stats ? (
        <p className={styles.placeholder}>
          {live.stream === 'reconnecting'
            ? 'The cluster event stream is unavailable; retrying.'
            : 'Connecting to the cluster event stream…'}
        </p>
      ) : (
        <>
          <div className={styles.summary}>
            <div className={styles.card}>
              <span className={styles.cardLabel}>Leader now</span>
              <span
                className={styles.cardValue}
                data-testid="elections-current-leader"
                data-leader={status?.leader_id ?? 0}
              >
                {status && status.leader_id !== 0 ? `node ${status.leader_id}` : 'none'}
              </span>
              <span className={styles.cardNote}>term {formatCount(status?.term ?? 0)}</span>
            </div>
            <LastFailover era={lastFailover} gateway={gateway} />
            <div className={styles.card}>
              <span className={styles.cardLabel}>Elections started</span>
              <span className={styles.cardValue} data-testid="election-count">{formatCount([...counts.values()].reduce((a, b) => a + b, 0))}</span>
              <span className={styles.cardNote} data-testid="election-reasons">
                {[...counts.entries()]
                  .map(([reason, n]) => `${n} ${(reason in REASON_LABEL ? REASON_LABEL[reason as keyof typeof REASON_LABEL] : reason)}`)
                  .join(' · ') || 'none since the nodes started'}
              </span>
            </div>
          </div>

          <Panel title="Terms" aside={`${terms.length} leader${terms.length === 1 ? '' : 's'} remembered`}>
            <TermTimeline eras={terms} nowMs={end} />
            <TermTable eras={terms} />
          </Panel>
        </>
      )}
    </div>
  );
}

interface LastFailoverProps {
  era: Era | undefined;
  gateway: ReturnType<typeof failoverAsTheGatewaySawIt>;
}

function LastFailover({ era, gateway }: LastFailoverProps) {
  return (
    <div
      className={styles.card}
      data-testid="last-failover"
      data-term={era?.term ?? 0}
      data-leader={era?.leaderId ?? 0}
      data-leaderless-ms={era?.leaderlessMs ?? ''}
      data-reason={era?.election?.reason ?? ''}
    >
      <span className={styles.cardLabel}>Last election</span>
      {era ? (
        <>
          <span className={styles.cardValue}>{formatDurationMs(era.leaderlessMs ?? 0)} without a leader</span>
          <span className={styles.cardNote}>
            node {era.leaderId} won term {era.term} at {formatClock(era.startMs)}
            {era.election?.reason && ` · ${REASON_LABEL[era.election.reason]}`}
            {era.election?.preVote && ' · pre-vote first'}
          </span>
          <span
            className={styles.cardNote}
            data-testid="gateway-failover"
            data-unavailable={gateway?.unavailable ?? ''}
            data-timed-out={gateway?.timedOut ?? ''}
            data-window-ms={gateway ? gateway.toMs - gateway.fromMs : ''}
          >
            {gateway
              ? `the gateway answered ${formatCount(gateway.unavailable)} × 503, ${formatCount(gateway.timedOut)} × 504 over ${formatDurationMs(gateway.toMs - gateway.fromMs)}`
              : 'no 503 or 504 from the gateway known around it'}
          </span>
        </>
      ) : (
        <span className={styles.cardNote}>none in what the members remember</span>
      )}
    </div>
  );
}

function TermTable({ eras }: { eras: readonly Era[] }) {
  if (eras.length === 0) return null;
  return (
    <div className={styles.scroll}>
      <table className={styles.table} aria-label="Terms">
        <thead>
          <tr>
            <th scope="col">Term</th>
            <th scope="col">Leader</th>
            <th scope="col">From</th>
            <th scope="col" className={styles.num}>
              In office
            </th>
            <th scope="col">Why the election started</th>
            <th scope="col" className={styles.num}>
              No leader for
            </th>
          </tr>
        </thead>
        <tbody>
          {[...eras].reverse().map((era) => (
            <tr
              key={`${era.term}-${era.leaderId}`}
              data-testid={`term-row-${era.term}`}
              data-leader={era.leaderId}
              data-leaderless-ms={era.leaderlessMs ?? ''}
            >
              <th scope="row">{formatCount(era.term)}</th>
              <td>node {era.leaderId}</td>
              <td className={styles.mono}>{formatClock(era.startMs)}</td>
              <td className={styles.num}>{era.endMs === null ? 'now' : formatDurationMs(era.endMs - era.startMs)}</td>
              <td>
                {era.election ? (
                  <>
                    <Pill tone={era.election.reason === 'transfer' ? 'accent' : 'warn'}>
                      {era.election.reason ? REASON_LABEL[era.election.reason] : 'unknown'}
                    </Pill>{' '}
                    <span className={styles.muted}>
                      node {era.election.nodeId} stood{era.election.preVote ? ', pre-vote first' : ''}
                    </span>
                  </>
                ) : (
                  <span className={styles.muted}>not remembered</span>
                )}
              </td>
              <td className={styles.num}>{era.leaderlessMs === null ? '—' : formatDurationMs(era.leaderlessMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
