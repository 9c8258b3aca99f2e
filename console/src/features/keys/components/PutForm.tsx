import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { formatCount } from '../../../lib/format';
import { bytesFromText } from '../api/bytes';
import { putValue, type PutLease, type ValueEncoding } from '../api/writeKeys';

interface PutFormProps {
  onStored: (key: Uint8Array) => void;
  /** Put every key under this lease; without it the form offers a choice of lease. */
  leaseId?: number;
}

type LeaseKind = PutLease['kind'];

/**
 * Store a value under a key, typed as text or as base64 for binary values, optionally
 * under a lease: an existing one, or one of its own granted with a TTL in the same write.
 */
export function PutForm({ onStored, leaseId }: PutFormProps) {
  const client = useQueryClient();
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [encoding, setEncoding] = useState<ValueEncoding>('utf8');
  const [leaseKind, setLeaseKind] = useState<LeaseKind>('none');
  const [leaseText, setLeaseText] = useState('');
  const put = useMutation({
    mutationFn: (input: { key: Uint8Array; value: string; encoding: ValueEncoding; lease: PutLease }) =>
      putValue(input.key, input.value, input.encoding, input.lease),
    onSuccess: async (_result, input) => {
      await client.invalidateQueries({ queryKey: ['keys'] });
      onStored(input.key);
    },
  });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    let lease: PutLease = { kind: 'none' };
    if (leaseId !== undefined) lease = { kind: 'lease', id: String(leaseId) };
    else if (leaseKind === 'lease') lease = { kind: 'lease', id: leaseText };
    else if (leaseKind === 'ttl') lease = { kind: 'ttl', ttl: leaseText };
    put.mutate({ key: bytesFromText(key), value, encoding, lease });
  }

  return (
    <form className={controls.form} onSubmit={submit} aria-label="Put a value" data-testid="put-form">
      <label className={controls.field}>
        Key
        <input className={controls.input} value={key} onChange={(e) => { setKey(e.target.value); }} name="key" />
      </label>
      <label className={controls.field}>
        Value
        <textarea className={controls.textarea} value={value} onChange={(e) => { setValue(e.target.value); }} name="value" />
      </label>
      {leaseId === undefined && (
        <div className={controls.row}>
          <label className={controls.field}>
            Lease
            <select
              className={controls.select}
              value={leaseKind}
              onChange={(e) => { setLeaseKind(e.target.value as LeaseKind); }}
              name="lease-kind"
            >
              <option value="none">none</option>
              <option value="lease">an existing lease</option>
              <option value="ttl">a new lease with a TTL</option>
            </select>
          </label>
          {leaseKind !== 'none' && (
            <label className={controls.field}>
              {leaseKind === 'lease' ? 'Lease id' : 'TTL'}
              <input
                className={controls.input}
                value={leaseText}
                onChange={(e) => { setLeaseText(e.target.value); }}
                placeholder={leaseKind === 'lease' ? '12' : '30s'}
                name="lease"
              />
            </label>
          )}
        </div>
      )}
      <div className={controls.row}>
        <label className={controls.field}>
          Value is
          <select
            className={controls.select}
            value={encoding}
            onChange={(e) => { setEncoding(e.target.value as ValueEncoding); }}
            name="encoding"
          >
            <option value="utf8">text (UTF-8)</option>
            <option value="base64">base64 (binary)</option>
          </select>
        </label>
        <button type="submit" className={`${controls.button} ${controls.primary}`} disabled={put.isPending}>
          {put.isPending ? 'Storing…' : 'Put'}
        </button>
      </div>
      {put.isError && <ErrorNote error={put.error} action="Put" />}
      {put.isSuccess && (
        <p className={controls.ok} role="status" data-testid="put-ok">
          Stored at index {formatCount(put.data.index)} (leader {put.data.leader_id})
          {put.data.lease !== undefined && `, under lease ${put.data.lease}`}.
        </p>
      )}
    </form>
  );
}
