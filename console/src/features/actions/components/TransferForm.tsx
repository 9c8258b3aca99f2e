import { useMutation } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { transferLeader } from '../api/maintenance';
import type { Member } from '../api/types';

interface TransferFormProps {
  voters: readonly Member[];
  leaderId: number;
}

/** Hand leadership to another voter; the API answers once the target leads. */
export function TransferForm({ voters, leaderId }: TransferFormProps) {
  const candidates = voters.filter((m) => m.id !== leaderId);
  const [target, setTarget] = useState('');
  const chosen = candidates.some((m) => String(m.id) === target) ? target : String(candidates[0]?.id ?? '');
  const transfer = useMutation({ mutationFn: (id: number) => transferLeader(id) });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    if (chosen !== '') transfer.mutate(Number(chosen));
  }

  return (
    <form className={controls.form} onSubmit={submit} aria-label="Transfer leadership" data-testid="transfer-form">
      <div className={controls.row}>
        <label className={controls.field}>
          New leader
          <select className={controls.select} value={chosen} onChange={(e) => { setTarget(e.target.value); }} name="target">
            {candidates.map((m) => (
              <option key={m.id} value={m.id}>
                node {m.id}
              </option>
            ))}
          </select>
        </label>
        <button
          type="submit"
          className={`${controls.button} ${controls.primary}`}
          disabled={transfer.isPending || chosen === ''}
        >
          {transfer.isPending ? 'Transferring…' : 'Transfer leadership'}
        </button>
      </div>
      {candidates.length === 0 && <p className={controls.hint}>No other voter can lead.</p>}
      {transfer.isError && <ErrorNote error={transfer.error} action="Transfer" />}
      {transfer.isSuccess && (
        <p className={controls.ok} role="status" data-testid="transfer-ok">
          Node {transfer.data.leader_id} leads, in term {transfer.data.term}.
        </p>
      )}
    </form>
  );
}
