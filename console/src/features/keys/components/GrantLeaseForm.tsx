import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { formatCount, formatDurationMs } from '../../../lib/format';
import { grantLease } from '../api/leases';
import styles from './LeasesPage.module.css';

interface GrantLeaseFormProps {
  onGranted: (id: number) => void;
}

/**
 * Grant a lease: the TTL goes as typed (`30s`, `1500ms`, `2m`) and the API judges it;
 * an id is optional (the cluster picks the smallest free one).
 */
export function GrantLeaseForm({ onGranted }: GrantLeaseFormProps) {
  const client = useQueryClient();
  const [ttl, setTtl] = useState('60s');
  const [id, setId] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const grant = useMutation({
    mutationFn: (input: { ttl: string; id: number | null }) => grantLease(input.ttl, input.id),
    onSuccess: async (result) => {
      await client.invalidateQueries({ queryKey: ['keys'] });
      onGranted(result.id);
    },
  });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    const typed = id.trim();
    // The id is a JSON number in the body: only a whole number can be sent at all.
    if (typed !== '' && !/^\d+$/.test(typed)) {
      setProblem(`The id must be a whole number (got “${id}”).`);
      grant.reset();
      return;
    }
    setProblem(null);
    grant.mutate({ ttl: ttl.trim(), id: typed === '' ? null : Number(typed) });
  }

  return (
    <form className={controls.form} onSubmit={submit} aria-label="Grant a lease" data-testid="grant-form">
      <div className={controls.row}>
        <label className={`${controls.field} ${styles.grow}`}>
          TTL
          <input className={controls.input} value={ttl} onChange={(e) => { setTtl(e.target.value); }} name="ttl" />
        </label>
        <label className={`${controls.field} ${styles.grow}`}>
          Id (optional)
          <input
            className={controls.input}
            value={id}
            onChange={(e) => { setId(e.target.value); }}
            placeholder="the cluster picks"
            inputMode="numeric"
            name="lease-id"
          />
        </label>
        <button type="submit" className={`${controls.button} ${controls.primary}`} disabled={grant.isPending}>
          {grant.isPending ? 'Granting…' : 'Grant'}
        </button>
      </div>
      <p className={controls.hint}>1 s to a year: 30s, 1500ms, 2m, 1h.</p>
      {problem && (
        <p role="alert" className={styles.problem}>
          {problem}
        </p>
      )}
      {grant.isError && <ErrorNote error={grant.error} action="Granting" />}
      {grant.isSuccess && (
        <p className={controls.ok} role="status" data-testid="granted">
          Granted lease {grant.data.id} with a TTL of {formatDurationMs(grant.data.ttl_ms)} at index{' '}
          {formatCount(grant.data.index)}.
        </p>
      )}
    </form>
  );
}
