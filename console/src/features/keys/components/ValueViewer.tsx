import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmBar } from '../../../components/ConfirmBar';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { Pill } from '../../../components/Pill';
import { formatCount } from '../../../lib/format';
import { keyLabel, textFromBytes } from '../api/bytes';
import { valueQuery } from '../api/getValue';
import type { CasSeed } from '../api/txn';
import { VALUE_KIND_LABEL, viewValue } from '../api/valueView';
import { deleteKey } from '../api/writeKeys';
import styles from './KeysPage.module.css';

interface ValueViewerProps {
  keyBytes: Uint8Array;
  onDeleted: () => void;
  /** Start a transaction that compare-and-swaps this key on its mod index (text keys only). */
  onCompareAndSwap?: (seed: CasSeed) => void;
}

/** One key's value, read linearizably, shown by kind; deleting it asks first. */
export function ValueViewer({ keyBytes, onDeleted, onCompareAndSwap }: ValueViewerProps) {
  const client = useQueryClient();
  const value = useQuery(valueQuery(keyBytes));
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation({
    mutationFn: () => deleteKey(keyBytes),
    onSuccess: async () => {
      setConfirming(false);
      await client.invalidateQueries({ queryKey: ['keys'] });
      onDeleted();
    },
  });
  const label = keyLabel(keyBytes);

  let body;
  if (value.isPending) {
    body = <p className={styles.hint}>Reading…</p>;
  } else if (value.isError) {
    body = <ErrorNote error={value.error} action="Reading the value" />;
  } else {
    const view = viewValue(value.data.value);
    body = (
      <>
        <div className={styles.valueMeta}>
          <Pill tone="accent" testId="value-kind">
            {VALUE_KIND_LABEL[view.kind]}
          </Pill>
          <span>{formatCount(value.data.value.length)} bytes</span>
          <span data-testid="value-versions">
            created at index {formatCount(value.data.createIndex)}, last put at index{' '}
            {formatCount(value.data.modIndex)}
          </span>
          {value.data.lease !== 0 && (
            <span data-testid="value-lease">
              under lease {String(value.data.lease)}, deleted when it ends
            </span>
          )}
          <span>
            read at index {formatCount(value.data.index)} from node {value.data.nodeId}
          </span>
        </div>
        <pre className={styles.value} data-testid="value-text" data-kind={view.kind}>
          {view.text === '' ? <span className={styles.hint}>(empty value)</span> : view.text}
        </pre>
        {onCompareAndSwap && !label.binary && (
          <div className={controls.row}>
            <button
              type="button"
              className={controls.button}
              data-testid="start-cas-txn"
              onClick={() => {
                onCompareAndSwap({ key: label.text, modIndex: value.data.modIndex, value: textFromBytes(value.data.value) });
              }}
            >
              Compare-and-swap on its mod index…
            </button>
            <span className={styles.hint}>fills the transaction form below</span>
          </div>
        )}
      </>
    );
  }

  return (
    <div className={styles.viewer} data-testid="value-viewer">
      <div className={styles.viewerHead}>
        <code className={styles.selectedKey} data-testid="selected-key">
          {label.text}
        </code>
        <button
          type="button"
          className={`${controls.button} ${controls.danger}`}
          onClick={() => { setConfirming(true); }}
          disabled={confirming}
          data-testid="delete-key"
        >
          Delete
        </button>
      </div>
      {confirming && (
        <ConfirmBar
          confirmLabel="Delete key"
          busy={remove.isPending}
          onConfirm={() => { remove.mutate(); }}
          onCancel={() => {
            setConfirming(false);
            remove.reset();
          }}
        >
          Delete <code>{label.text}</code>? The delete is replicated to every member and cannot be undone.
        </ConfirmBar>
      )}
      {remove.isError && <ErrorNote error={remove.error} action="Deleting" />}
      {body}
    </div>
  );
}
