import type { ClusterStatus, RangeStatus } from '../../../api/types';
import styles from './MembershipTable.module.css';

interface RangesTableProps {
  status: ClusterStatus;
}

/** A range's bound as text: its key, or what an empty bound means. */
function bound(range: RangeStatus, key: string, empty: string): string {
  if (key === '') return empty;
  return range.encoding === 'base64' ? `base64 ${key}` : key;
}

/**
 * The ranges of keys and the raft groups serving them, then per node how many
 * ranges it holds and leads. Rows are `data-testid="range-row-<id>"` with
 * `data-leader`; the per-node counts are `data-testid="range-load-<id>"` with
 * `data-ranges` and `data-leads`, so browser tests need no CSS.
 */
export function RangesTable({ status }: RangesTableProps) {
  const ranges = status.ranges;
  const nodes = [...status.nodes].map((n) => n.id).sort((a, b) => a - b);
  const load = nodes.map((id) => ({
    id,
    ranges: ranges.filter((r) => r.voters.includes(id) || r.learners.includes(id)).length,
    leads: ranges.filter((r) => r.leader_id === id).length,
  }));
  return (
    <div className={styles.scroll}>
      <table className={styles.table} aria-label="Ranges">
        <thead>
          <tr>
            <th scope="col">Range</th>
            <th scope="col">Keys</th>
            <th scope="col">Leader</th>
            <th scope="col" className={styles.num}>
              Term
            </th>
            <th scope="col">Voters</th>
            <th scope="col">Learners</th>
          </tr>
        </thead>
        <tbody>
          {ranges.map((r) => (
            <tr key={r.id} data-testid={`range-row-${r.id}`} data-leader={r.leader_id}>
              <th scope="row">range {r.id}</th>
              <td>
                {bound(r, r.start, 'first key')} → {bound(r, r.end, 'last key')}
              </td>
              <td>{r.leader_id === 0 ? 'none' : `node ${r.leader_id}`}</td>
              <td className={styles.num}>{r.term}</td>
              <td>{r.voters.join(', ')}</td>
              <td>{r.learners.length === 0 ? '—' : r.learners.join(', ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {ranges.length === 0 && <p className={styles.empty}>The cluster reported no ranges.</p>}
      <p className={styles.empty}>
        {load.map((l, i) => (
          <span key={l.id} data-testid={`range-load-${l.id}`} data-ranges={l.ranges} data-leads={l.leads}>
            {i > 0 && ' · '}node {l.id}: {l.ranges} {l.ranges === 1 ? 'range' : 'ranges'}, leads {l.leads}
          </span>
        ))}
      </p>
    </div>
  );
}
