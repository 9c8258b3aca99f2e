import type { NodeRole, RaftEvent } from '../../../api/types';
import { LiveIndicator } from '../../../components/LiveIndicator';
import { Panel } from '../../../components/Panel';
import { formatClock, formatCount, formatDurationMs } from '../../../lib/format';
import { eras, mergeEvents, REASON_LABEL } from '../../../lib/terms';
import { useStatsStream, type StatsStreamOptions } from '../../../lib/useStatsStream';
import { failoverAsTheGatewaySawIt, gatewayBuckets } from '../../../lib/gateway';
import { incidentWindow, roleSpans, type Window } from '../model';
import page from '../../../components/Page.module.css';
import styles from './IncidentPage.module.css';

interface IncidentPageProps {
  /** Tests shorten the stream's timings; the app uses the defaults. */
  stream?: StatsStreamOptions;
}

const ROLE_CLASS: Record<NodeRole, string> = {
  leader: styles.leader ?? '',
  follower: styles.follower ?? '',
  candidate: styles.candidate ?? '',
  learner: styles.follower ?? '',
  unknown: styles.unknown ?? '',
};

function eventMark(e: RaftEvent): { symbol: string; label: string; className: string } | null {
  if (e.kind === 'election_started') {
    const reason = e.election?.reason ? REASON_LABEL[e.election.reason] : 'election';
    return { symbol: '◆', label: `stood (${reason}${e.election?.pre_vote ? ', pre-vote' : ''})`, className: styles.markElection ?? '' };
  }
  if (e.kind === 'leader_changed' && e.leader_id === 0) return { symbol: '✕', label: 'lost its leader', className: styles.markLost ?? '' };
  if (e.kind === 'leader_changed') return { symbol: '●', label: `follows node ${e.leader_id} (term ${e.term})`, className: styles.markLeader ?? '' };
  return null;
}

/**
 * The latest change of leader on one time axis: each node's role as the status frames
 * showed it, the raft events every member reported (who lost the leader, who stood and
 * why, who won), the leaderless window, and what the gateway answered 503 and 504 while
 * it lasted — the view to put in an incident report.
 */
export function IncidentPage({ stream }: IncidentPageProps) {
  const live = useStatsStream(stream);
  const latestStats = live.samples.at(-1);
  const events = mergeEvents(latestStats?.stats, live.raftEvents);
  const terms = eras(events);
  const failover = [...terms].reverse().find((e) => e.leaderlessFromMs !== null);
  const nowMs = Math.max(latestStats?.receivedAtMs ?? 0, live.statuses.at(-1)?.receivedAtMs ?? 0, events.at(-1)?.at_ms ?? 0);
  const window = incidentWindow(failover, nowMs);
  const buckets = gatewayBuckets(live.samples).filter((b) => b.toMs >= window.fromMs && b.fromMs <= window.toMs);
  const gateway = failoverAsTheGatewaySawIt(buckets, window);
  const lanes = roleSpans(live.statuses, window);
  const ids = [...new Set([...lanes.keys(), ...events.map((e) => e.node_id)])].sort((a, b) => a - b);
  const hasGateway = latestStats?.stats.gateway !== undefined;
  const span = Math.max(1, window.toMs - window.fromMs);
  const x = (ms: number) => `${Math.min(100, Math.max(0, ((ms - window.fromMs) / span) * 100)).toFixed(3)}%`;
  const w = (a: number, b: number) => `${Math.max(0, ((Math.min(b, window.toMs) - Math.max(a, window.fromMs)) / span) * 100).toFixed(3)}%`;
  const peak = Math.max(1, ...buckets.map((b) => b.unavailable + b.timedOut));
  const leaderlessFromMs = failover?.leaderlessFromMs ?? null;
  const inWindow = events.filter((e) => e.at_ms >= window.fromMs && e.at_ms <= window.toMs);

  return (
    <div className={page.page}>
      <div className={page.titleRow}>
        <h1 className={page.title}>Incident</h1>
        <LiveIndicator state={live.stream} detail={live.stream === 'reconnecting' ? live.streamError : null} />
      </div>
      {!latestStats && live.statuses.length === 0 ? (
        <p className={styles.placeholder}>
          {live.stream === 'reconnecting' ? 'The cluster event stream is unavailable; retrying.' : 'Connecting to the cluster event stream…'}
        </p>
      ) : (
        <>
          <section
            className={styles.summary}
            data-testid="incident-summary"
            data-term={failover?.term ?? 0}
            data-leader={failover?.leaderId ?? 0}
            data-leaderless-ms={failover?.leaderlessMs ?? ''}
            data-unavailable={gateway?.unavailable ?? 0}
            data-timed-out={gateway?.timedOut ?? 0}
          >
            {failover ? (
              <>
                <h2 className={styles.headline}>
                  Node {failover.leaderId} took over in term {formatCount(failover.term)} after{' '}
                  {formatDurationMs(failover.leaderlessMs ?? 0)} without a leader
                </h2>
                <p className={styles.detail}>
                  Leader lost at {formatClock(failover.leaderlessFromMs ?? failover.startMs)}; node {failover.leaderId} elected at{' '}
                  {formatClock(failover.startMs)}
                  {failover.election?.reason && ` (${REASON_LABEL[failover.election.reason]}${failover.election.preVote ? ', pre-vote first' : ''})`}.
                </p>
                <p className={styles.detail} data-testid="gateway-window">
                  {!hasGateway
                    ? 'The gateway’s answers are not known here (the nodes were not given its admin address).'
                    : gateway
                      ? `The gateway answered ${formatCount(gateway.unavailable)} × 503 and ${formatCount(gateway.timedOut)} × 504 from ${formatClock(gateway.fromMs)} to ${formatClock(gateway.toMs)} (${formatDurationMs(gateway.toMs - gateway.fromMs)}).`
                      : 'The gateway answered no 503 or 504 around it.'}
                </p>
              </>
            ) : (
              <h2 className={styles.headline}>No change of leader in what the members remember</h2>
            )}
          </section>

          <Panel title="Timeline" aside={`${formatClock(window.fromMs)} – ${formatClock(window.toMs)}`}>
            <div className={styles.chart} data-testid="incident-timeline">
              {leaderlessFromMs !== null && failover && (
                <div className={styles.overlay}>
                  <div
                    className={styles.leaderless}
                    style={{ left: x(leaderlessFromMs), width: w(leaderlessFromMs, failover.startMs) }}
                    title="no leader"
                    data-testid="incident-leaderless"
                  />
                </div>
              )}
              {ids.map((id) => (
                <div key={id} className={styles.lane} data-testid={`incident-lane-node-${id}`}>
                  <span className={styles.laneLabel}>node {id}</span>
                  <div className={styles.track}>
                    {(lanes.get(id) ?? []).map((s) => (
                      <div
                        key={`${s.fromMs}-${s.role}`}
                        className={`${styles.span} ${s.healthy ? ROLE_CLASS[s.role] : styles.unknown}`}
                        style={{ left: x(s.fromMs), width: w(s.fromMs, s.toMs) }}
                        title={`${s.healthy ? s.role : 'down'} from ${formatClock(s.fromMs)}`}
                        data-role={s.healthy ? s.role : 'down'}
                      />
                    ))}
                    {inWindow
                      .filter((e) => e.node_id === id)
                      .map((e) => {
                        const mark = eventMark(e);
                        return mark ? (
                          <span
                            key={`${e.kind}-${e.at_ms}-${e.term}`}
                            className={`${styles.mark} ${mark.className}`}
                            style={{ left: x(e.at_ms) }}
                            title={`${formatClock(e.at_ms)} node ${id} ${mark.label}`}
                            data-testid="incident-event"
                            data-kind={e.kind}
                          >
                            {mark.symbol}
                          </span>
                        ) : null;
                      })}
                  </div>
                </div>
              ))}
              <div className={styles.lane} data-testid="incident-lane-gateway">
                <span className={styles.laneLabel}>gateway 503/504</span>
                <div className={styles.track}>
                  {buckets.map((b) =>
                    b.unavailable + b.timedOut > 0 ? (
                      <div
                        key={b.fromMs}
                        className={styles.bars}
                        style={{ left: x(b.fromMs), width: w(b.fromMs, b.toMs) }}
                        title={`${formatClock(b.fromMs)}–${formatClock(b.toMs)}: ${b.unavailable} × 503, ${b.timedOut} × 504`}
                        data-testid="gateway-bar"
                      >
                        <div className={styles.bar503} style={{ height: `${(b.unavailable / peak) * 100}%` }} />
                        <div className={styles.bar504} style={{ height: `${(b.timedOut / peak) * 100}%` }} />
                      </div>
                    ) : null,
                  )}
                </div>
              </div>
              <Axis window={window} />
            </div>
            <Legend />
          </Panel>

          <Panel title="Raft events in the window" aside={`${inWindow.length} events`}>
            <ol className={styles.events}>
              {inWindow.map((e) => (
                <li key={`${e.node_id}-${e.kind}-${e.at_ms}-${e.term}`}>
                  <time className={styles.time}>{formatClock(e.at_ms)}</time> node {e.node_id}: {e.kind.replace('_', ' ')}
                  {e.kind === 'leader_changed' && (e.leader_id === 0 ? ' (none)' : ` to node ${e.leader_id}`)}
                  {e.election?.reason && ` (${REASON_LABEL[e.election.reason]})`}
                  {e.duration_ms > 0 && `, ${formatDurationMs(e.duration_ms)} without a leader`} · term {e.term}
                </li>
              ))}
            </ol>
          </Panel>
        </>
      )}
    </div>
  );
}

function Axis({ window }: { window: Window }) {
  const ticks = 5;
  return (
    <div className={styles.axis}>
      {Array.from({ length: ticks + 1 }, (_, i) => {
        const ms = window.fromMs + ((window.toMs - window.fromMs) * i) / ticks;
        return (
          <span key={i} style={{ left: `${(i / ticks) * 100}%` }}>
            {formatClock(ms).slice(3)}
          </span>
        );
      })}
    </div>
  );
}

function Legend() {
  return (
    <p className={styles.legend}>
      <span><i className={`${styles.swatch} ${styles.leader}`} /> leader</span>
      <span><i className={`${styles.swatch} ${styles.follower}`} /> follower</span>
      <span><i className={`${styles.swatch} ${styles.candidate}`} /> candidate</span>
      <span><i className={`${styles.swatch} ${styles.unknown}`} /> down</span>
      <span><i className={`${styles.swatch} ${styles.leaderlessSwatch}`} /> no leader</span>
      <span>◆ stood · ✕ lost its leader · ● follows a new leader</span>
      <span><i className={`${styles.swatch} ${styles.bar503}`} /> 503 <i className={`${styles.swatch} ${styles.bar504}`} /> 504</span>
    </p>
  );
}
