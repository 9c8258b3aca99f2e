import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import {
  COMPARE_OPS,
  COMPARE_TARGETS,
  newCompareRow,
  newOpRow,
  OP_KINDS,
  OP_LABEL,
  runTxn,
  TARGET_LABEL,
  txnRequestOf,
  type CompareRow,
  type CompareTarget,
  type OpRow,
  type TxnDraft,
} from '../api/txn';
import type { TxnCompareOp, TxnOpKind, TxnRequest } from '../api/types';
import styles from './TxnForm.module.css';
import { TxnResultView } from './TxnResultView';

type Branch = 'success' | 'failure';

const BRANCH_LABEL: Record<Branch, string> = { success: 'Success', failure: 'Failure' };

const EMPTY_DRAFT: TxnDraft = { compare: [], success: [], failure: [] };

interface TxnFormProps {
  /** The rows the form starts with (e.g. a compare-and-swap on a key being viewed). */
  initial?: TxnDraft;
  /** The transaction ran (either branch): the store may have changed. */
  onRan: () => void;
}

/**
 * A transaction: compares that must all hold, the operations that run when they do
 * (success) and those that run when one does not (failure). The answer says which
 * branch ran and what each of its operations produced.
 */
export function TxnForm({ initial = EMPTY_DRAFT, onRan }: TxnFormProps) {
  const client = useQueryClient();
  const [draft, setDraft] = useState<TxnDraft>(initial);
  const [problem, setProblem] = useState<string | null>(null);
  const txn = useMutation({
    mutationFn: (request: TxnRequest) => runTxn(request),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: ['keys'] });
      onRan();
    },
  });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    const built = txnRequestOf(draft);
    if (!built.ok) {
      setProblem(built.problem);
      txn.reset();
      return;
    }
    setProblem(null);
    txn.mutate(built.request);
  }

  const setCompare = (id: number, change: Partial<CompareRow>) => {
    setDraft((d) => ({ ...d, compare: d.compare.map((row) => (row.id === id ? { ...row, ...change } : row)) }));
  };
  const setOp = (branch: Branch, id: number, change: Partial<OpRow>) => {
    setDraft((d) => ({ ...d, [branch]: d[branch].map((row) => (row.id === id ? { ...row, ...change } : row)) }));
  };

  return (
    <form className={controls.form} onSubmit={submit} aria-label="Transaction" data-testid="txn-form">
      <fieldset className={styles.section} data-testid="txn-compares">
        <legend className={styles.legend}>
          If every compare holds <span className={styles.legendHint}>(none: success runs)</span>
        </legend>
        {draft.compare.map((row, i) => (
          <CompareRowFields
            key={row.id}
            row={row}
            n={i + 1}
            onChange={(change) => { setCompare(row.id, change); }}
            onRemove={() => { setDraft((d) => ({ ...d, compare: d.compare.filter((r) => r.id !== row.id) })); }}
          />
        ))}
        <div>
          <button
            type="button"
            className={styles.add}
            onClick={() => { setDraft((d) => ({ ...d, compare: [...d.compare, newCompareRow()] })); }}
          >
            + Add compare
          </button>
        </div>
      </fieldset>
      {(['success', 'failure'] as const).map((branch) => (
        <fieldset key={branch} className={styles.section} data-testid={`txn-${branch}`}>
          <legend className={styles.legend}>
            {branch === 'success' ? 'Then (success)' : 'Else (failure)'}{' '}
            <span className={styles.legendHint}>in order, each seeing the writes before it</span>
          </legend>
          {draft[branch].map((row, i) => (
            <OpRowFields
              key={row.id}
              row={row}
              label={`${BRANCH_LABEL[branch]} op ${i + 1}`}
              onChange={(change) => { setOp(branch, row.id, change); }}
              onRemove={() => { setDraft((d) => ({ ...d, [branch]: d[branch].filter((r) => r.id !== row.id) })); }}
            />
          ))}
          <div>
            <button
              type="button"
              className={styles.add}
              onClick={() => { setDraft((d) => ({ ...d, [branch]: [...d[branch], newOpRow()] })); }}
            >
              + Add {branch} op
            </button>
          </div>
        </fieldset>
      ))}
      <div className={controls.row}>
        <button type="submit" className={`${controls.button} ${controls.primary}`} disabled={txn.isPending}>
          {txn.isPending ? 'Running…' : 'Run transaction'}
        </button>
        <span className={controls.hint}>decided and applied atomically, in one raft entry</span>
      </div>
      {problem && (
        <p role="alert" className={styles.problem} data-testid="txn-problem">
          {problem}
        </p>
      )}
      {txn.isError && <ErrorNote error={txn.error} action="The transaction" />}
      {txn.isSuccess && <TxnResultView request={txn.variables} outcome={txn.data} />}
    </form>
  );
}

interface CompareRowFieldsProps {
  row: CompareRow;
  n: number;
  onChange: (change: Partial<CompareRow>) => void;
  onRemove: () => void;
}

function CompareRowFields({ row, n, onChange, onRemove }: CompareRowFieldsProps) {
  const label = `Compare ${n}`;
  // `exists` is true or false: only equal and not equal make sense of it.
  const ops = row.target === 'exists' ? COMPARE_OPS.filter((op) => op === 'equal' || op === 'not_equal') : COMPARE_OPS;
  function changeTarget(target: CompareTarget) {
    if (target === 'exists') {
      onChange({ target, operand: 'true', op: row.op === 'not_equal' ? 'not_equal' : 'equal' });
    } else {
      onChange({ target, operand: row.target === 'exists' ? '' : row.operand });
    }
  }
  return (
    <div className={styles.row} data-testid="compare-row">
      <input
        className={`${controls.input} ${styles.key}`}
        aria-label={`${label} key`}
        placeholder="key"
        value={row.key}
        onChange={(e) => { onChange({ key: e.target.value }); }}
      />
      <select
        className={controls.select}
        aria-label={`${label} target`}
        value={row.target}
        onChange={(e) => { changeTarget(e.target.value as CompareTarget); }}
      >
        {COMPARE_TARGETS.map((target) => (
          <option key={target} value={target}>
            {TARGET_LABEL[target]}
          </option>
        ))}
      </select>
      <select
        className={`${controls.select} ${styles.op}`}
        aria-label={`${label} op`}
        value={row.op}
        onChange={(e) => { onChange({ op: e.target.value as TxnCompareOp }); }}
      >
        {ops.map((op) => (
          <option key={op} value={op} title={op}>
            {OP_LABEL[op]} {op.replace('_', ' ')}
          </option>
        ))}
      </select>
      {row.target === 'exists' ? (
        <select
          className={`${controls.select} ${styles.operand}`}
          aria-label={`${label} operand`}
          value={row.operand}
          onChange={(e) => { onChange({ operand: e.target.value }); }}
        >
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      ) : (
        <input
          className={`${controls.input} ${styles.operand}`}
          aria-label={`${label} operand`}
          placeholder={row.target === 'value' ? 'value (text)' : row.target === 'lease' ? 'lease id (0: none)' : 'raft index (0: absent)'}
          inputMode={row.target === 'value' ? undefined : 'numeric'}
          value={row.operand}
          onChange={(e) => { onChange({ operand: e.target.value }); }}
        />
      )}
      <button type="button" className={styles.remove} aria-label={`Remove ${label.toLowerCase()}`} onClick={onRemove}>
        ✕
      </button>
    </div>
  );
}

interface OpRowFieldsProps {
  row: OpRow;
  /** e.g. "Success op 2": names the row's fields for assistive technology and tests. */
  label: string;
  onChange: (change: Partial<OpRow>) => void;
  onRemove: () => void;
}

function OpRowFields({ row, label, onChange, onRemove }: OpRowFieldsProps) {
  return (
    <div className={styles.row} data-testid="op-row" data-kind={row.kind}>
      <select
        className={`${controls.select} ${styles.kind}`}
        aria-label={`${label} kind`}
        value={row.kind}
        onChange={(e) => { onChange({ kind: e.target.value as TxnOpKind }); }}
      >
        {OP_KINDS.map((kind) => (
          <option key={kind} value={kind}>
            {kind}
          </option>
        ))}
      </select>
      <input
        className={`${controls.input} ${styles.key}`}
        aria-label={`${label} ${row.kind === 'range' ? 'start' : 'key'}`}
        placeholder={row.kind === 'range' ? 'start (inclusive; empty: first key)' : 'key'}
        value={row.key}
        onChange={(e) => { onChange({ key: e.target.value }); }}
      />
      {row.kind === 'put' && (
        <>
          <input
            className={`${controls.input} ${styles.value}`}
            aria-label={`${label} value`}
            placeholder="value (text)"
            value={row.value}
            onChange={(e) => { onChange({ value: e.target.value }); }}
          />
          <input
            className={`${controls.input} ${styles.small}`}
            aria-label={`${label} lease`}
            placeholder="lease id"
            inputMode="numeric"
            value={row.lease}
            onChange={(e) => { onChange({ lease: e.target.value }); }}
          />
        </>
      )}
      {row.kind === 'range' && (
        <>
          <input
            className={`${controls.input} ${styles.value}`}
            aria-label={`${label} end`}
            placeholder="end (exclusive; empty: last key)"
            value={row.end}
            onChange={(e) => { onChange({ end: e.target.value }); }}
          />
          <input
            className={`${controls.input} ${styles.small}`}
            aria-label={`${label} limit`}
            placeholder="limit"
            inputMode="numeric"
            value={row.limit}
            onChange={(e) => { onChange({ limit: e.target.value }); }}
          />
        </>
      )}
      <button type="button" className={styles.remove} aria-label={`Remove ${label.toLowerCase()}`} onClick={onRemove}>
        ✕
      </button>
    </div>
  );
}
