import { Pill } from '../../../components/Pill';
import { formatCount } from '../../../lib/format';
import { keyLabel } from '../api/bytes';
import type { KeyValueBytes, OpOutcome, TxnOutcome } from '../api/txn';
import type { TxnOp, TxnRequest } from '../api/types';
import styles from './TxnForm.module.css';
import { ValueBlock } from './ValueBlock';

interface TxnResultViewProps {
  /** The request that ran: its branch's operations name the keys of each result. */
  request: TxnRequest;
  outcome: TxnOutcome;
}

/** Which branch ran, and what each of its operations produced, in order. */
export function TxnResultView({ request, outcome }: TxnResultViewProps) {
  const ops = (outcome.succeeded ? request.success : request.failure) ?? [];
  return (
    <div className={styles.result} role="status" data-testid="txn-result" data-succeeded={String(outcome.succeeded)}>
      <p className={styles.verdict}>
        <Pill tone={outcome.succeeded ? 'good' : 'warn'} testId="txn-branch">
          {outcome.succeeded ? 'success branch ran' : 'failure branch ran'}
        </Pill>
        <span>
          {outcome.succeeded
            ? (request.compare ?? []).length === 0
              ? 'no compare to check'
              : 'every compare held'
            : 'a compare did not hold'}
          , decided at index {formatCount(outcome.index)} by node {outcome.nodeId}
        </span>
      </p>
      {outcome.results.length === 0 ? (
        <p className={styles.muted}>The branch had no operations.</p>
      ) : (
        <ol className={styles.results}>
          {outcome.results.map((result, i) => (
            <li key={i} className={styles.resultRow} data-testid="txn-op-result" data-op={result.op}>
              <OpResult op={ops[i]} result={result} />
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

function OpResult({ op, result }: { op: TxnOp | undefined; result: OpOutcome }) {
  const key = op && 'key' in op ? op.key : '';
  switch (result.op) {
    case 'put':
      return (
        <p className={styles.opLine}>
          <span className={styles.opName}>put</span>
          <code className={styles.opKey}>{key}</code>
          <span>stored{op?.op === 'put' && op.lease ? `, under lease ${op.lease}` : ''}</span>
        </p>
      );
    case 'delete':
      return (
        <p className={styles.opLine}>
          <span className={styles.opName}>delete</span>
          <code className={styles.opKey}>{key}</code>
          <span data-testid="txn-deleted">{result.deleted ? 'deleted' : 'not there: nothing deleted'}</span>
        </p>
      );
    case 'get':
      return (
        <>
          <p className={styles.opLine}>
            <span className={styles.opName}>get</span>
            <code className={styles.opKey}>{key}</code>
            {result.kv ? <PairFacts kv={result.kv} /> : <span data-testid="txn-not-found">not found</span>}
          </p>
          {result.kv && <ValueBlock value={result.kv.value} />}
        </>
      );
    case 'range': {
      const range = op?.op === 'range' ? op : null;
      return (
        <>
          <p className={styles.opLine}>
            <span className={styles.opName}>range</span>
            <code className={styles.opKey}>
              [{range?.start ?? '(first key)'}, {range?.end ?? '(end)'})
            </code>
            <span data-testid="txn-range-count">
              {result.kvs.length} {result.kvs.length === 1 ? 'pair' : 'pairs'}
              {result.more && ', more beyond the limit'}
            </span>
          </p>
          {result.kvs.length > 0 && (
            <ul className={styles.pairs}>
              {result.kvs.map((kv, j) => {
                const label = keyLabel(kv.key);
                return (
                  <li key={j} data-testid="txn-pair">
                    <p className={styles.opLine}>
                      <code className={styles.opKey}>{label.text}</code>
                      <PairFacts kv={kv} />
                    </p>
                    <ValueBlock value={kv.value} />
                  </li>
                );
              })}
            </ul>
          )}
        </>
      );
    }
  }
}

function PairFacts({ kv }: { kv: KeyValueBytes }) {
  return (
    <span className={styles.muted}>
      created at index {formatCount(kv.createIndex)}, last put at index {formatCount(kv.modIndex)}
      {kv.lease !== 0 && `, under lease ${kv.lease}`}
    </span>
  );
}
