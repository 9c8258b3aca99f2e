import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { formatCount } from '../../../lib/format';
import { compareAndSwap, type CasInput } from '../api/writeKeys';
import styles from './KeysPage.module.css';

/**
 * Compare-and-swap: write (or delete) a key only if it holds the expected value (or
 * does not exist). A failed comparison is not an error: the API answers 200 with the
 * value the key held, which is shown.
 */
interface CasFormProps {
  /** The swap succeeded: the store changed. */
  onSwapped: () => void;
}

export function CasForm({ onSwapped }: CasFormProps) {
  const client = useQueryClient();
  const [key, setKey] = useState('');
  const [expected, setExpected] = useState('');
  const [mustBeAbsent, setMustBeAbsent] = useState(false);
  const [value, setValue] = useState('');
  const [deleteOnSuccess, setDeleteOnSuccess] = useState(false);
  const cas = useMutation({
    mutationFn: (input: CasInput) => compareAndSwap(input),
    onSuccess: (result) => {
      if (result.succeeded) {
        void client.invalidateQueries({ queryKey: ['keys'] });
        onSwapped();
      }
    },
  });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    cas.mutate({
      key,
      expected: mustBeAbsent ? null : expected,
      value: deleteOnSuccess ? null : value,
    });
  }

  return (
    <form className={controls.form} onSubmit={submit} aria-label="Compare and swap" data-testid="cas-form">
      <label className={controls.field}>
        Key
        <input className={controls.input} value={key} onChange={(e) => { setKey(e.target.value); }} name="cas-key" />
      </label>
      <label className={controls.field}>
        Expected value
        <input
          className={controls.input}
          value={expected}
          onChange={(e) => { setExpected(e.target.value); }}
          disabled={mustBeAbsent}
          name="cas-expected"
        />
      </label>
      <label className={controls.check}>
        <input type="checkbox" checked={mustBeAbsent} onChange={(e) => { setMustBeAbsent(e.target.checked); }} />
        the key must not exist
      </label>
      <label className={controls.field}>
        New value
        <input
          className={controls.input}
          value={value}
          onChange={(e) => { setValue(e.target.value); }}
          disabled={deleteOnSuccess}
          name="cas-value"
        />
      </label>
      <label className={controls.check}>
        <input type="checkbox" checked={deleteOnSuccess} onChange={(e) => { setDeleteOnSuccess(e.target.checked); }} />
        delete the key if the comparison holds
      </label>
      <div className={controls.row}>
        <button type="submit" className={`${controls.button} ${controls.primary}`} disabled={cas.isPending}>
          {cas.isPending ? 'Sending…' : 'Compare and swap'}
        </button>
      </div>
      {cas.isError && <ErrorNote error={cas.error} action="Compare-and-swap" />}
      {cas.isSuccess && (
        <p
          role="status"
          className={cas.data.succeeded ? controls.ok : styles.casMiss}
          data-testid="cas-result"
          data-succeeded={String(cas.data.succeeded)}
        >
          {cas.data.succeeded ? 'Swapped' : 'Not swapped: the comparison failed'} at index{' '}
          {formatCount(cas.data.index)}. The key held{' '}
          {cas.data.current === null ? (
            'nothing (it did not exist)'
          ) : (
            <>
              <code>{cas.data.current}</code>
              {cas.data.encoding === 'base64' && ' (base64: not UTF-8)'}
            </>
          )}
          .
        </p>
      )}
    </form>
  );
}
