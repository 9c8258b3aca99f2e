import type { ClusterStats, ClusterStatus, MemberStats, NodeStatus } from '../../../api/types';
import { Pill } from '../../../components/Pill';
import { formatBytes, formatCount, formatDurationMs } from '../../../lib/format';
import styles from './NodeDetails.module.css';

interface NodeDetailsProps {
  status: ClusterStatus;
  stats: ClusterStats;
}

/** What the leader knows of one follower's log (its `raft.members`). */
interface Progress {
  matchIndex: number;
  lagEntries: number;
  lagMs: number;
}

function progressOf(stats: ClusterStats, leaderId: number): Map<number, Progress> {
  const leader = stats.nodes.find((m) => m.id === leaderId)?.stats;
  return new Map(
    (leader?.raft.members ?? []).map((p) => [
      p.member,
      { matchIndex: p.match_index, lagEntries: p.lag_entries, lagMs: p.lag_ms },
    ]),
  );
}

/**
 * Each member in depth, from the `stats` frames: its raft position, how far the leader
 * has replicated to it (match index, lag in entries and in time), its process (disk,
 * memory, uptime, version). A diagram above shows who replicates to whom.
 */
export function NodeDetails({ status, stats }: NodeDetailsProps) {
  const progress = progressOf(stats, status.leader_id);
  const members = [...stats.nodes].sort((a, b) => a.id - b.id);
  return (
    <div className={styles.wrap}>
      <ReplicationDiagram status={status} stats={stats} progress={progress} />
      <div className={styles.grid}>
        {members.map((m) => (
          <NodeCard
            key={m.id}
            member={m}
            node={status.nodes.find((n) => n.id === m.id)}
            isLeader={m.id === status.leader_id}
            progress={progress.get(m.id)}
          />
        ))}
      </div>
    </div>
  );
}

function uptimeMs(member: MemberStats): number | null {
  const start = member.stats?.process.start_time_seconds;
  return start ? Math.max(0, member.at_ms - start * 1000) : null;
}

interface NodeCardProps {
  member: MemberStats;
  node: NodeStatus | undefined;
  isLeader: boolean;
  progress: Progress | undefined;
}

function NodeCard({ member, node, isLeader, progress }: NodeCardProps) {
  const s = member.stats;
  const role = s?.raft.role ?? node?.role ?? 'unknown';
  const uptime = uptimeMs(member);
  return (
    <article
      className={`${styles.card} ${isLeader ? styles.leader : ''} ${s ? '' : styles.down}`}
      data-testid={`node-detail-${member.id}`}
      data-role={role}
      data-leader={isLeader}
    >
      <header className={styles.head}>
        <h3 className={styles.name}>
          {isLeader && <span aria-hidden="true">★ </span>}node {member.id}
        </h3>
        <Pill tone={isLeader ? 'accent' : role === 'learner' || role === 'candidate' ? 'warn' : s ? 'neutral' : 'bad'}>
          {s ? role : 'unreachable'}
        </Pill>
      </header>
      <p className={styles.address}>{member.address}</p>
      {!s ? (
        <>
          <p className={styles.error}>{member.error ?? 'no numbers'}</p>
          {progress && (
            <dl className={styles.facts}>
              <Fact label="Match index" value={formatCount(progress.matchIndex)} testId={`match-${member.id}`} />
              <Fact
                label="Lag"
                value={`${formatCount(progress.lagEntries)} entries · ${formatDurationMs(progress.lagMs)}`}
                testId={`lag-${member.id}`}
              />
            </dl>
          )}
        </>
      ) : (
        <dl className={styles.facts}>
          <Fact label="Term" value={formatCount(s.raft.term)} />
          <Fact label="Health" value={s.raft.healthy ? 'healthy' : 'storage failed'} />
          <Fact label="Commit / applied" value={`${formatCount(s.raft.commit_index)} / ${formatCount(s.raft.applied_index)}`} />
          {progress && (
            <>
              <Fact label="Match index" value={formatCount(progress.matchIndex)} testId={`match-${member.id}`} />
              <Fact
                label="Lag"
                value={`${formatCount(progress.lagEntries)} entries · ${formatDurationMs(progress.lagMs)}`}
                testId={`lag-${member.id}`}
              />
            </>
          )}
          <Fact
            label="Disk free"
            value={`${formatBytes(s.process.data_dir_free_bytes ?? 0)} of ${formatBytes(s.process.data_dir_size_bytes ?? 0)}`}
          />
          <Fact label="Memory" value={formatBytes(s.process.resident_memory_bytes ?? 0)} />
          <Fact label="Uptime" value={uptime === null ? '—' : formatDurationMs(uptime)} />
          <Fact label="Version" value={s.version || '—'} />
          <Fact label="Members" value={`${s.raft.voters} voters${s.raft.learners ? `, ${s.raft.learners} learners` : ''}`} />
        </dl>
      )}
    </article>
  );
}

function Fact({ label, value, testId }: { label: string; value: string; testId?: string }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd data-testid={testId}>{value}</dd>
    </div>
  );
}

interface DiagramProps {
  status: ClusterStatus;
  stats: ClusterStats;
  progress: Map<number, Progress>;
}

/** The leader on the left, an arrow to every member it replicates to, labelled with that member's lag. */
function ReplicationDiagram({ status, stats, progress }: DiagramProps) {
  const ids = stats.nodes.map((m) => m.id).sort((a, b) => a - b);
  const leader = status.leader_id;
  const others = ids.filter((id) => id !== leader);
  const rowHeight = 56;
  const height = Math.max(1, others.length) * rowHeight + 16;
  const leaderY = height / 2;
  const reachable = new Set(stats.nodes.filter((m) => m.stats).map((m) => m.id));
  return (
    <svg
      className={styles.diagram}
      viewBox={`0 0 560 ${height}`}
      role="img"
      aria-label={leader ? `node ${leader} replicates to ${others.map((id) => `node ${id}`).join(', ')}` : 'no leader'}
      data-testid="replication-diagram"
    >
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">
          <path d="M0,0 L10,5 L0,10 z" fill="#5b6676" />
        </marker>
      </defs>
      {leader !== 0 && (
        <g>
          <rect x="8" y={leaderY - 20} width="120" height="40" rx="8" className={styles.leaderBox} />
          <text x="68" y={leaderY + 5} textAnchor="middle" className={styles.boxText}>
            ★ node {leader}
          </text>
        </g>
      )}
      {others.map((id, i) => {
        const y = 8 + i * rowHeight + rowHeight / 2;
        const p = progress.get(id);
        const up = reachable.has(id);
        return (
          <g key={id} data-testid={`replicates-to-${id}`}>
            {leader !== 0 && (
              <line
                x1="128"
                y1={leaderY}
                x2="400"
                y2={y}
                className={p && p.lagEntries > 0 ? styles.lagging : styles.link}
                markerEnd="url(#arrow)"
              />
            )}
            {leader !== 0 && (
              <text x="264" y={(leaderY + y) / 2 - 6} textAnchor="middle" className={styles.linkText}>
                {p ? `${formatCount(p.lagEntries)} behind · ${formatDurationMs(p.lagMs)}` : 'no progress known'}
              </text>
            )}
            <rect x="402" y={y - 20} width="150" height="40" rx="8" className={up ? styles.box : styles.deadBox} />
            <text x="477" y={y + 5} textAnchor="middle" className={styles.boxText}>
              node {id}
              {up ? '' : ' (down)'}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
