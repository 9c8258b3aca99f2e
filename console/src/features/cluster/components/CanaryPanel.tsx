import type { ClusterStats, MemberStats } from '../../../api/types';
import { Pill, type PillTone } from '../../../components/Pill';
import { formatClock, formatCount } from '../../../lib/format';
import styles from './NodeDetails.module.css';

type Verdict = 'violation' | 'ok' | 'inconclusive' | 'waiting' | 'unknown';

const TONE: Record<Verdict, PillTone> = {
  violation: 'bad',
  ok: 'good',
  inconclusive: 'warn',
  waiting: 'neutral',
  unknown: 'bad',
};

const WORDS: Record<Verdict, string> = {
  violation: 'not linearizable',
  ok: 'linearizable',
  inconclusive: 'inconclusive',
  waiting: 'no check yet',
  unknown: 'unreachable',
};

/**
 * A member's canary verdict from its `strata_canary_*` counters: any window found not
 * linearizable wins; otherwise every window checked was, or none has been yet (a node
 * without the canary counts nothing).
 */
export function verdictOf(member: MemberStats): Verdict {
  const c = member.stats?.canary;
  if (!c) return 'unknown';
  if (c.windows_violation > 0 || c.violations > 0) return 'violation';
  if (c.windows_ok > 0) return 'ok';
  if (c.windows_inconclusive > 0) return 'inconclusive';
  return 'waiting';
}

/** The consistency canary of every member: its verdict, its operations, its last completed check. */
export function CanaryPanel({ stats }: { stats: ClusterStats }) {
  const members = [...stats.nodes].sort((a, b) => a.id - b.id);
  return (
    <div className={styles.scrollTable}>
      <table className={styles.table} aria-label="Consistency canary">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Verdict</th>
            <th scope="col" className={styles.num}>
              Operations
            </th>
            <th scope="col" className={styles.num}>
              Windows ok / violated / inconclusive
            </th>
            <th scope="col">Last check</th>
          </tr>
        </thead>
        <tbody>
          {members.map((m) => {
            const verdict = verdictOf(m);
            const c = m.stats?.canary;
            const ops = c?.ops.reduce((sum, o) => sum + o.count, 0) ?? 0;
            return (
              <tr key={m.id} data-testid={`canary-${m.id}`} data-verdict={verdict}>
                <th scope="row">node {m.id}</th>
                <td>
                  <Pill tone={TONE[verdict]}>{WORDS[verdict]}</Pill>
                </td>
                <td className={styles.num}>{formatCount(ops)}</td>
                <td className={styles.num}>
                  {c ? `${formatCount(c.windows_ok)} / ${formatCount(c.windows_violation)} / ${formatCount(c.windows_inconclusive)}` : '—'}
                </td>
                <td className={styles.mono}>
                  {c && c.last_check_seconds > 0 ? formatClock(c.last_check_seconds * 1000) : '—'}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
