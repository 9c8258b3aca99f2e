import { useMutation } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { splitRange } from '../api/maintenance';
import type { SplitRangeResult } from '../api/types';

/** What a split did, in words. */
function outcome(result: SplitRangeResult): string {
  const r = result.range;
  const start = r.encoding === 'base64' ? `base64 ${r.start}` : r.start;
  const leader = r.leader_id === 0 ? 'no leader yet' : `led by node ${r.leader_id}`;
  return result.split
    ? `Range ${r.id} now serves the keys from ${start} on (split at index ${result.index}), ${leader}.`
    : `Range ${r.id} starts at ${start} already: nothing was split.`;
}

/**
 * Split the range holding a key at that key: a new raft group, with the same members,
 * serves the keys from there on. The result is `data-testid="split-ok"` with
 * `data-range` and `data-split`.
 */
export function SplitForm() {
  const [key, setKey] = useState('');
  const split = useMutation({ mutationFn: (at: string) => splitRange(at) });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    if (key !== '') split.mutate(key);
  }

  return (
    <form className={controls.form} onSubmit={submit} aria-label="Split a range" data-testid="split-form">
      <div className={controls.row}>
        <label className={controls.field}>
          Split at key
          <input
            className={controls.input}
            value={key}
            onChange={(e) => {
              setKey(e.target.value);
            }}
            name="key"
            placeholder="user/m"
          />
        </label>
        <button
          type="submit"
          className={`${controls.button} ${controls.primary}`}
          disabled={split.isPending || key === ''}
        >
          {split.isPending ? 'Splitting…' : 'Split range'}
        </button>
      </div>
      <p className={controls.hint}>
        The new range starts at the key, with the same members; a member added or removed later is added to or
        removed from every range. Ranges are not merged again.
      </p>
      {split.isError && <ErrorNote error={split.error} action="Split" />}
      {split.isSuccess && (
        <p
          className={controls.ok}
          role="status"
          data-testid="split-ok"
          data-range={split.data.range.id}
          data-split={split.data.split}
        >
          {outcome(split.data)}
        </p>
      )}
    </form>
  );
}
