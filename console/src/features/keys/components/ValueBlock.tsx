import { Pill } from '../../../components/Pill';
import { formatCount } from '../../../lib/format';
import { VALUE_KIND_LABEL, viewValue } from '../api/valueView';
import styles from './KeysPage.module.css';

/** A value as the value viewer shows one: pretty JSON, text, or a hex dump, with its kind. */
export function ValueBlock({ value }: { value: Uint8Array }) {
  const view = viewValue(value);
  return (
    <div className={styles.valueBlock}>
      <div className={styles.valueMeta}>
        <Pill tone="accent">{VALUE_KIND_LABEL[view.kind]}</Pill>
        <span>{formatCount(value.length)} bytes</span>
      </div>
      <pre className={styles.value} data-testid="txn-value" data-kind={view.kind}>
        {view.text === '' ? <span className={styles.hint}>(empty value)</span> : view.text}
      </pre>
    </div>
  );
}
