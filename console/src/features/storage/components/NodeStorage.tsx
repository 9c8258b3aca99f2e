import type { MemberStats } from '../../../api/types';
import { Pill } from '../../../components/Pill';
import { formatBytes, formatClock, formatCount, formatDurationMs } from '../../../lib/format';
import { amplification, compactions, flushesAndStalls, memtableFill, stallSeconds } from '../model';
import styles from './StoragePage.module.css';

interface NodeStorageProps {
  member: MemberStats;
}

function ratio(value: number | null): string {
  return value === null ? '—' : `${value.toFixed(2)}×`;
}

/** One node's LSM tree: memtables, levels against level 0's limits, amplification, its compactions. */
export function NodeStorage({ member }: NodeStorageProps) {
  const stats = member.stats;
  if (!stats) {
    return (
      <article className={styles.node} data-testid={`storage-node-${member.id}`} data-reachable="false">
        <h3 className={styles.nodeTitle}>node {member.id}</h3>
        <p className={styles.error}>{member.error ?? 'no numbers'}</p>
      </article>
    );
  }
  const engine = stats.engine;
  const fill = memtableFill(engine);
  const amp = amplification(engine);
  const l0 = engine.levels.find((l) => l.level === 0);
  const l0Files = l0?.files ?? 0;
  const rows = compactions(stats.engine_activity);
  const running = rows.filter((r) => r.state === 'running');
  const recent = rows.filter((r) => r.state === 'done').slice(0, 5);
  const other = flushesAndStalls(stats.engine_activity).slice(0, 4);
  const tables = engine.levels.reduce((sum, l) => sum + l.files, 0);
  return (
    <article
      className={styles.node}
      data-testid={`storage-node-${member.id}`}
      data-reachable="true"
      data-tables={tables}
      data-at={member.at_ms}
    >
      <header className={styles.nodeHeader}>
        <h3 className={styles.nodeTitle}>node {member.id}</h3>
        <span className={styles.muted}>
          {formatCount(engine.flushes)} flushes · {formatCount(engine.compactions)} compactions
        </span>
      </header>

      <div className={styles.meters}>
        <Meter
          label="Memtable"
          value={fill}
          text={`${formatBytes(engine.memtable_bytes)} of ${formatBytes(engine.memtable_limit_bytes)}`}
          testId={`memtable-${member.id}`}
        />
        <Meter
          label="Level 0"
          value={engine.l0_stop_files > 0 ? l0Files / engine.l0_stop_files : 0}
          mark={engine.l0_stop_files > 0 ? engine.l0_slowdown_files / engine.l0_stop_files : undefined}
          text={`${l0Files} tables · slows at ${engine.l0_slowdown_files}, stops at ${engine.l0_stop_files}`}
          tone={l0Files >= engine.l0_slowdown_files ? 'warn' : 'ok'}
          testId={`l0-${member.id}`}
        />
      </div>
      <p className={styles.muted}>
        {engine.immutable_memtables} immutable memtable{engine.immutable_memtables === 1 ? '' : 's'} (
        {formatBytes(engine.immutable_memtable_bytes)}) waiting to flush
      </p>

      <table className={styles.levels} aria-label={`node ${member.id} levels`}>
        <thead>
          <tr>
            <th scope="col">Level</th>
            <th scope="col" className={styles.num}>
              Tables
            </th>
            <th scope="col" className={styles.num}>
              Bytes
            </th>
          </tr>
        </thead>
        <tbody>
          {engine.levels.map((l) => (
            <tr key={l.level} data-testid={`level-${member.id}-${l.level}`} data-files={l.files} data-bytes={l.bytes}>
              <th scope="row">L{l.level}</th>
              <td className={styles.num}>{formatCount(l.files)}</td>
              <td className={styles.num}>{formatBytes(l.bytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>

      <dl className={styles.facts}>
        <div>
          <dt>Write amplification</dt>
          <dd>{ratio(amp.write)}</dd>
        </div>
        <div>
          <dt>Read amplification</dt>
          <dd title="tables consulted per point lookup">{ratio(amp.read)}</dd>
        </div>
        <div>
          <dt>Space amplification</dt>
          <dd title="bytes in all levels per byte in the largest">{ratio(amp.space)}</dd>
        </div>
        <div>
          <dt>Writers held up</dt>
          <dd data-testid={`stall-${member.id}`}>{formatDurationMs(stallSeconds(stats) * 1000)}</dd>
        </div>
      </dl>

      <h4 className={styles.subTitle}>Compactions</h4>
      {running.length === 0 && recent.length === 0 ? (
        <p className={styles.muted}>None since the node started.</p>
      ) : (
        <ul className={styles.activity}>
          {[...running, ...recent].map((c) => (
            <li
              key={`${c.state}-${c.atMs}-${c.level}`}
              data-testid="compaction"
              data-node={member.id}
              data-state={c.state}
              data-at={c.atMs}
              data-level={c.level}
              data-output-level={c.outputLevel}
              data-files-out={c.state === 'done' ? c.filesOut : ''}
              data-trivial={c.trivialMove}
            >
              <Pill tone={c.state === 'running' ? 'warn' : 'good'}>{c.state}</Pill>
              <span>
                L{c.level} → L{c.outputLevel}
              </span>
              <span className={styles.muted}>
                {c.filesIn} tables, {formatBytes(c.bytesIn)} in
                {c.state === 'done' &&
                  (c.trivialMove ? ' · moved without rewriting' : ` · ${c.filesOut} tables, ${formatBytes(c.bytesOut)} out`)}
                {c.durationMs !== null && ` · ${formatDurationMs(c.durationMs)}`}
              </span>
              <time className={styles.time}>{formatClock(c.atMs)}</time>
            </li>
          ))}
        </ul>
      )}

      {other.length > 0 && (
        <>
          <h4 className={styles.subTitle}>Flushes and stalls</h4>
          <ul className={styles.activity}>
            {other.map((a) => (
              <li key={`${a.kind}-${a.at_ms}`} data-testid={a.kind} data-node={member.id} data-at={a.at_ms}>
                <Pill tone={a.kind === 'stall' ? 'bad' : 'neutral'}>{a.kind}</Pill>
                <span className={styles.muted}>
                  {a.kind === 'flush'
                    ? `${formatBytes(a.bytes_out)} to a new L0 table`
                    : `${a.stopped ? 'stopped' : 'slowed'} writers`}{' '}
                  · {formatDurationMs(a.duration_ms)}
                </span>
                <time className={styles.time}>{formatClock(a.at_ms)}</time>
              </li>
            ))}
          </ul>
        </>
      )}
    </article>
  );
}

interface MeterProps {
  label: string;
  /** 0..1 */
  value: number;
  /** A second threshold on the same scale, 0..1. */
  mark?: number;
  text: string;
  tone?: 'ok' | 'warn';
  testId: string;
}

function Meter({ label, value, mark, text, tone = 'ok', testId }: MeterProps) {
  const pct = Math.round(Math.min(1, Math.max(0, value)) * 100);
  return (
    <div className={styles.meter} data-testid={testId} data-value={value.toFixed(3)}>
      <div className={styles.meterLabel}>
        <span>{label}</span>
        <span className={styles.muted}>{text}</span>
      </div>
      <div className={styles.meterTrack} role="meter" aria-label={label} aria-valuenow={pct} aria-valuemin={0} aria-valuemax={100}>
        <div className={`${styles.meterFill} ${tone === 'warn' ? styles.meterWarn : ''}`} style={{ width: `${pct}%` }} />
        {mark !== undefined && <div className={styles.meterMark} style={{ left: `${Math.round(mark * 100)}%` }} />}
      </div>
    </div>
  );
}
