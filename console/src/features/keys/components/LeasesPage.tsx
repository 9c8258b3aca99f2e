import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorNote } from '../../../components/ErrorNote';
import page from '../../../components/Page.module.css';
import { Panel } from '../../../components/Panel';
import { formatClock, formatCount } from '../../../lib/format';
import { leasesQuery } from '../api/leases';
import type { RevokeResult } from '../api/types';
import { useNow } from '../../../lib/useNow';
import { GrantLeaseForm } from './GrantLeaseForm';
import { LeaseDetail } from './LeaseDetail';
import { LeaseTable } from './LeaseTable';
import styles from './LeasesPage.module.css';

/** How often the countdowns are drawn again. */
const TICK_MS = 250;

interface Revoked {
  id: number;
  result: RevokeResult;
}

/** Every lease with its TTL counting down; grant, keep alive, revoke, and the keys under one. */
export function LeasesPage() {
  const list = useQuery(leasesQuery());
  const now = useNow(TICK_MS);
  const [selected, setSelected] = useState<number | null>(null);
  const [revoked, setRevoked] = useState<Revoked | null>(null);

  // The list is shown exactly as the API answers it: a lease acknowledged as revoked is
  // no longer listed by any read that follows the revoke.
  const leases = list.data?.leases ?? [];
  const inList = leases.find((lease) => lease.id === selected);

  let body;
  if (list.isPending) {
    body = <p className={styles.placeholder}>Reading leases…</p>;
  } else if (list.isError) {
    body = (
      <div className={styles.padded}>
        <ErrorNote error={list.error} action="Listing leases" />
      </div>
    );
  } else if (leases.length === 0) {
    body = (
      <p className={styles.placeholder} data-testid="leases-empty">
        No lease is active.
      </p>
    );
  } else {
    body = (
      <LeaseTable leases={leases} readAtMs={list.dataUpdatedAt} nowMs={now} selected={selected} onSelect={setSelected} />
    );
  }

  return (
    <div className={page.page}>
      <h1 className={page.title}>Leases</h1>
      <div className={styles.columns}>
        <div className={styles.side}>
          <Panel
            title="Leases"
            aside={
              list.data && (
                <span data-testid="leases-read">
                  {leases.length} {leases.length === 1 ? 'lease' : 'leases'}, read at {formatClock(list.dataUpdatedAt)}{' '}
                  from node {list.data.node_id}
                </span>
              )
            }
          >
            {body}
          </Panel>
          <Panel title="Grant a lease">
            <GrantLeaseForm onGranted={setSelected} />
          </Panel>
        </div>
        <div className={styles.side}>
          <Panel title="Lease">
            {revoked && (
              <p className={styles.revoked} role="status" data-testid="revoked">
                Lease {revoked.id} revoked at index {formatCount(revoked.result.index)}:{' '}
                {revoked.result.keys_deleted === 1 ? '1 key' : `${revoked.result.keys_deleted} keys`} deleted.
              </p>
            )}
            {selected === null ? (
              <p className={styles.placeholder}>Pick a lease to see its keys, keep it alive or revoke it.</p>
            ) : (
              <LeaseDetail
                key={selected}
                id={selected}
                listReading={inList ? { remainingMs: inList.remaining_ms, readAtMs: list.dataUpdatedAt } : null}
                nowMs={now}
                onRevoked={(id, result) => {
                  setRevoked({ id, result });
                  setSelected(null);
                }}
              />
            )}
          </Panel>
        </div>
      </div>
    </div>
  );
}
