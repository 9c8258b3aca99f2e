import { LiveIndicator } from '../../../components/LiveIndicator';
import { Pill } from '../../../components/Pill';
import { keyLabel, textFromBytes } from '../api/bytes';
import { useKeyChanges } from '../hooks/useKeyChanges';
import styles from './KeysPage.module.css';

/** The longest value preview, in characters. */
const PREVIEW = 60;

function preview(value: Uint8Array): string {
  const text = textFromBytes(value);
  if (text === null) return `${value.length} bytes`;
  return text.length > PREVIEW ? `${text.slice(0, PREVIEW)}…` : text;
}

/** The changes committed under the browsed prefix since the page opened, newest first. */
export function ChangeFeed({ prefix }: { prefix: string }) {
  const { changes, through, lost, restarted } = useKeyChanges(prefix);
  return (
    <div data-testid="change-feed" data-through={through ?? ''}>
      <div className={styles.feedStatus}>
        <LiveIndicator
          state={lost ? 'reconnecting' : through === null ? 'connecting' : 'live'}
          detail={lost ?? (through === null ? null : `through index ${through}`)}
        />
      </div>
      {restarted && (
        <p className={styles.feedNote} data-testid="feed-restarted">
          {restarted}
        </p>
      )}
      {changes.length === 0 ? (
        <p className={styles.placeholder}>
          {prefix === '' ? 'No change yet.' : `No change under “${prefix}” yet.`}
        </p>
      ) : (
        <ol className={styles.feed}>
          {changes.map((c, i) => {
            const label = keyLabel(c.key);
            return (
              <li key={`${c.index}-${changes.length - i}`} data-testid="change-row" data-index={c.index}>
                <span className={styles.feedIndex}>{c.index}</span>
                <Pill tone={c.type === 'put' ? 'good' : 'warn'}>{c.type}</Pill>
                <span className={styles.feedKey}>{label.text}</span>
                {c.value && <span className={styles.feedValue}>{preview(c.value)}</span>}
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
