import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { Pill } from '../../../components/Pill';
import { formatCount } from '../../../lib/format';
import { compact, snapshot } from '../api/maintenance';
import type { CompactResult, Member, SnapshotResult } from '../api/types';
import styles from './ActionsPage.module.css';

type Outcome = { op: 'compact'; result: CompactResult } | { op: 'snapshot'; result: SnapshotResult };

const TONE = { done: 'good', running: 'warn', failed: 'bad' } as const;

/** Trigger an engine compaction or a raft snapshot on one member or all of them. */
export function MaintenanceForm({ members }: { members: readonly Member[] }) {
  const [target, setTarget] = useState('all');
  const ids = target === 'all' ? [] : [Number(target)];
  const work = useMutation({
    mutationFn: async (op: Outcome['op']): Promise<Outcome> =>
      op === 'compact' ? { op, result: await compact(ids) } : { op, result: await snapshot(ids) },
  });

  return (
    <div className={controls.form} data-testid="maintenance-form">
      <div className={controls.row}>
        <label className={controls.field}>
          On
          <select className={controls.select} value={target} onChange={(e) => { setTarget(e.target.value); }} name="on">
            <option value="all">every member</option>
            {members.map((m) => (
              <option key={m.id} value={m.id}>
                node {m.id}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className={controls.button} disabled={work.isPending} onClick={() => { work.mutate('compact'); }}>
          Compact
        </button>
        <button type="button" className={controls.button} disabled={work.isPending} onClick={() => { work.mutate('snapshot'); }}>
          Snapshot
        </button>
      </div>
      <p className={controls.hint}>
        Compact flushes the memtable and merges level 0 into level 1. Snapshot makes the applied state durable and
        drops the raft log up to it. Neither changes the data.
      </p>
      {work.isPending && <p className={controls.hint}>Working…</p>}
      {work.isError && <ErrorNote error={work.error} action="The request" />}
      {work.isSuccess && (
        <ul className={styles.outcomes} data-testid="maintenance-result" data-op={work.data.op}>
          {work.data.op === 'compact'
            ? work.data.result.nodes.map((n) => (
                <li key={n.id} data-testid={`outcome-${n.id}`} data-outcome={n.outcome}>
                  node {n.id} <Pill tone={TONE[n.outcome]}>{n.outcome}</Pill> compaction in {formatCount(n.duration_ms)} ms
                  {n.error && <span className={styles.errorText}> {n.error}</span>}
                </li>
              ))
            : work.data.result.nodes.map((n) => (
                <li key={n.id} data-testid={`outcome-${n.id}`} data-outcome={n.outcome}>
                  node {n.id} <Pill tone={TONE[n.outcome]}>{n.outcome}</Pill>
                  {n.outcome === 'done' &&
                    ` durable through index ${formatCount(n.durable_index)}; log starts at ${formatCount(n.first_index_after)} (was ${formatCount(n.first_index_before)})`}
                  {` in ${formatCount(n.duration_ms)} ms`}
                  {n.error && <span className={styles.errorText}> {n.error}</span>}
                </li>
              ))}
        </ul>
      )}
    </div>
  );
}
