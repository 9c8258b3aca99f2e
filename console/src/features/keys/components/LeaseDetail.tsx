import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmBar } from '../../../components/ConfirmBar';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { formatDurationMs } from '../../../lib/format';
import { base64FromBytes, keyLabel } from '../api/bytes';
import { keepLeaseAlive, leaseQuery, revokeLease } from '../api/leases';
import type { RevokeResult } from '../api/types';
import { Countdown, remainingNow, type TtlReading } from './LeaseTable';
import styles from './LeasesPage.module.css';
import { PutForm } from './PutForm';
import { ValueViewer } from './ValueViewer';

/** How many of a lease's keys the revoke confirmation names. */
const NAMED_KEYS = 5;

interface LeaseDetailProps {
  id: number;
  /** The list's reading of the lease, when the list holds it. */
  listReading: TtlReading | null;
  nowMs: number;
  onRevoked: (id: number, result: RevokeResult) => void;
}

/** One lease: its TTL counting down, its keys (each readable), keep-alive and revoke. */
export function LeaseDetail({ id, listReading, nowMs, onRevoked }: LeaseDetailProps) {
  const client = useQueryClient();
  const lease = useQuery(leaseQuery(id));
  const [confirming, setConfirming] = useState(false);
  const [openKey, setOpenKey] = useState<Uint8Array | null>(null);
  const keepAlive = useMutation({
    mutationFn: () => keepLeaseAlive(id),
    onSuccess: () => client.invalidateQueries({ queryKey: ['keys'] }),
  });
  const revoke = useMutation({
    mutationFn: () => revokeLease(id),
    onSuccess: async (result) => {
      setConfirming(false);
      onRevoked(id, result);
      await client.invalidateQueries({ queryKey: ['keys'] });
    },
  });

  if (lease.isPending) return <p className={styles.placeholder}>Reading lease {id}…</p>;
  if (lease.isError) {
    return (
      <div className={styles.padded}>
        <ErrorNote error={lease.error} action={`Reading lease ${id}`} />
      </div>
    );
  }

  const { keys, ttlMs } = lease.data;
  const remaining = remainingNow([listReading, { remainingMs: lease.data.remainingMs, readAtMs: lease.dataUpdatedAt }], nowMs) ?? 0;
  const named = keys.slice(0, NAMED_KEYS).map((k) => keyLabel(k).text);
  const openId = openKey ? base64FromBytes(openKey) : null;

  return (
    <div className={styles.detail} data-testid="lease-detail" data-lease-id={id}>
      <div className={styles.detailHead}>
        <h3 className={styles.detailTitle}>Lease {id}</h3>
        <div className={controls.row}>
          <button
            type="button"
            className={controls.button}
            onClick={() => { keepAlive.mutate(); }}
            disabled={keepAlive.isPending}
            data-testid="keep-alive"
          >
            {keepAlive.isPending ? 'Keeping alive…' : 'Keep alive once'}
          </button>
          <button
            type="button"
            className={`${controls.button} ${controls.danger}`}
            onClick={() => { setConfirming(true); }}
            disabled={confirming}
            data-testid="revoke-lease"
          >
            Revoke
          </button>
        </div>
      </div>
      <dl className={styles.facts}>
        <div>
          <dt>Granted TTL</dt>
          <dd data-testid="lease-ttl">{formatDurationMs(ttlMs)}</dd>
        </div>
        <div>
          <dt>Remaining</dt>
          <dd>
            <Countdown remainingMs={remaining} ttlMs={ttlMs} />
          </dd>
        </div>
        <div>
          <dt>Keys</dt>
          <dd data-testid="lease-detail-key-count">{keys.length}</dd>
        </div>
      </dl>
      <p className={styles.hint}>
        The leader ends the lease, deleting its keys, once it has answered no keep-alive for a whole TTL; keep it
        alive at least every third of it.
      </p>
      {confirming && (
        <ConfirmBar
          confirmLabel="Revoke lease"
          busy={revoke.isPending}
          onConfirm={() => { revoke.mutate(); }}
          onCancel={() => {
            setConfirming(false);
            revoke.reset();
          }}
        >
          Revoke lease {id}?{' '}
          {keys.length === 0 ? (
            'It holds no key, so nothing else is deleted.'
          ) : (
            <>
              Its {keys.length === 1 ? 'key' : `${keys.length} keys`} (
              {named.map((text, i) => (
                <span key={text}>
                  {i > 0 && ', '}
                  <code>{text}</code>
                </span>
              ))}
              {keys.length > named.length && `, and ${keys.length - named.length} more`}) will be deleted with it, in
              one write that cannot be undone.
            </>
          )}
        </ConfirmBar>
      )}
      {revoke.isError && <ErrorNote error={revoke.error} action="Revoking" />}
      {keepAlive.isError && <ErrorNote error={keepAlive.error} action="Keeping alive" />}
      {keepAlive.isSuccess && (
        <p className={controls.ok} role="status" data-testid="kept-alive">
          Kept alive: its {formatDurationMs(keepAlive.data.ttl_ms)} TTL runs again from now.
        </p>
      )}

      <h4 className={styles.subTitle}>Keys under it</h4>
      {keys.length === 0 ? (
        <p className={styles.hint} data-testid="lease-no-keys">
          No key is under this lease.
        </p>
      ) : (
        <ul className={styles.keyList} data-testid="lease-keys">
          {keys.map((key) => {
            const keyId = base64FromBytes(key);
            const label = keyLabel(key);
            return (
              <li key={keyId}>
                <button
                  type="button"
                  className={`${styles.keyButton} ${keyId === openId ? styles.keySelected : ''}`}
                  aria-current={keyId === openId ? 'true' : undefined}
                  onClick={() => { setOpenKey(key); }}
                  data-testid="lease-key"
                  data-key={label.text}
                >
                  {label.binary && <span className={styles.hexTag}>hex</span>}
                  {label.text}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {openKey && openId && (
        <ValueViewer
          key={openId}
          keyBytes={openKey}
          onDeleted={() => { setOpenKey(null); }}
        />
      )}

      <h4 className={styles.subTitle}>Put a key under it</h4>
      <PutForm leaseId={id} onStored={setOpenKey} />
    </div>
  );
}
