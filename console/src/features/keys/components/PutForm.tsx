import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { formatCount } from '../../../lib/format';
import { bytesFromText } from '../api/bytes';
import { putValue, type ValueEncoding } from '../api/writeKeys';

interface PutFormProps {
  onStored: (key: Uint8Array) => void;
}

/** Store a value under a key, typed as text or as base64 for binary values. */
export function PutForm({ onStored }: PutFormProps) {
  const client = useQueryClient();
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [encoding, setEncoding] = useState<ValueEncoding>('utf8');
  const put = useMutation({
    mutationFn: (input: { key: Uint8Array; value: string; encoding: ValueEncoding }) =>
      putValue(input.key, input.value, input.encoding),
    onSuccess: async (_result, input) => {
      await client.invalidateQueries({ queryKey: ['keys'] });
      onStored(input.key);
    },
  });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    put.mutate({ key: bytesFromText(key), value, encoding });
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
          Stored at index {formatCount(put.data.index)} (leader {put.data.leader_id}).
        </p>
      )}
    </form>
  );
}
