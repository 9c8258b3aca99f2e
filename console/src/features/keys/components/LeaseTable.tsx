import { useQuery } from '@tanstack/react-query';
import { Pill } from '../../../components/Pill';
import { formatDurationMs } from '../../../lib/format';
import { formatCountdown, leaseQuery, remainingAt } from '../api/leases';
import type { LeaseStatus } from '../api/types';
import styles from './LeasesPage.module.css';

/** A remaining TTL as the leader reported it, and when (by the browser's clock) it came. */
export interface TtlReading {
  remainingMs: number;
  readAtMs: number;
}

/** What is left now of the TTL, by whichever reading came last. */
export function remainingNow(readings: readonly (TtlReading | null)[], nowMs: number): number | null {
  let latest: TtlReading | null = null;
  for (const reading of readings) {
    if (reading && (!latest || reading.readAtMs > latest.readAtMs)) latest = reading;
  }
  return latest ? remainingAt(latest.remainingMs, latest.readAtMs, nowMs) : null;
}

interface LeaseTableProps {
  leases: readonly LeaseStatus[];
  /** When the list was read, by the browser's clock. */
  readAtMs: number;
  nowMs: number;
  selected: number | null;
  onSelect: (id: number) => void;
}

/** Every lease: its granted TTL, what is left of it (counting down), how many keys it holds. */
export function LeaseTable({ leases, readAtMs, nowMs, selected, onSelect }: LeaseTableProps) {
  return (
    <div className={styles.tableWrap}>
      <table className={styles.table}>
        <thead>
          <tr>
            <th scope="col">Lease</th>
            <th scope="col">Granted TTL</th>
            <th scope="col">Remaining</th>
            <th scope="col">Keys</th>
          </tr>
        </thead>
        <tbody data-testid="lease-list-body">
          {leases.map((lease) => (
            <LeaseRow
              key={lease.id}
              lease={lease}
              listReading={{ remainingMs: lease.remaining_ms, readAtMs }}
              nowMs={nowMs}
              selected={lease.id === selected}
              onSelect={() => { onSelect(lease.id); }}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface LeaseRowProps {
  lease: LeaseStatus;
  listReading: TtlReading;
  nowMs: number;
  selected: boolean;
  onSelect: () => void;
}

function LeaseRow({ lease, listReading, nowMs, selected, onSelect }: LeaseRowProps) {
  // The list does not count keys; the lease's own time-to-live answer lists them.
  const detail = useQuery(leaseQuery(lease.id));
  const detailReading = detail.data ? { remainingMs: detail.data.remainingMs, readAtMs: detail.dataUpdatedAt } : null;
  const remaining = remainingNow([listReading, detailReading], nowMs) ?? 0;
  return (
    <tr className={selected ? styles.selectedRow : undefined} data-testid="lease-row" data-lease-id={lease.id}>
      <td>
        <button
          type="button"
          className={styles.leaseButton}
          onClick={onSelect}
          aria-current={selected ? 'true' : undefined}
          aria-label={`Lease ${lease.id}`}
        >
          {lease.id}
        </button>
      </td>
      <td>{formatDurationMs(lease.ttl_ms)}</td>
      <td>
        <Countdown remainingMs={remaining} ttlMs={lease.ttl_ms} />
      </td>
      <td data-testid="lease-key-count">
        {detail.data ? detail.data.keys.length : detail.isError ? <span className={styles.muted}>—</span> : '…'}
      </td>
    </tr>
  );
}

/** What is left of a TTL, in words and as a bar that empties; "running out" once it reads 0. */
export function Countdown({ remainingMs, ttlMs }: { remainingMs: number; ttlMs: number }) {
  const fraction = ttlMs > 0 ? Math.min(1, remainingMs / ttlMs) : 0;
  return (
    <span className={styles.countdown} data-testid="lease-remaining" data-remaining-ms={Math.round(remainingMs)}>
      {remainingMs > 0 ? (
        <span className={styles.countdownText}>{formatCountdown(remainingMs)}</span>
      ) : (
        <Pill tone="warn">running out</Pill>
      )}
      <span className={styles.bar} aria-hidden="true">
        <span
          className={`${styles.barFill} ${fraction < 1 / 3 ? styles.barLow : ''}`}
          style={{ width: `${(fraction * 100).toFixed(1)}%` }}
        />
      </span>
    </span>
  );
}
