import { useQuery } from '@tanstack/react-query';
import { ApiError } from '../../../api/http';
import { ErrorNote } from '../../../components/ErrorNote';
import { base64FromBytes, keyLabel } from '../api/bytes';
import { keyPageQuery } from '../api/scanKeys';
import styles from './KeysPage.module.css';

interface KeyListProps {
  prefix: string;
  /** Tokens of the pages before this one; the last is this page's (null: the first page). */
  pageTokens: readonly (string | null)[];
  selected: string | null;
  onSelect: (key: Uint8Array) => void;
  onNext: (token: string) => void;
  onPrevious: () => void;
  /** Start the scan again from its first page. */
  onRestart: () => void;
}

/** One page of keys under a prefix, with previous/next page controls. */
export function KeyList({ prefix, pageTokens, selected, onSelect, onNext, onPrevious, onRestart }: KeyListProps) {
  const token = pageTokens[pageTokens.length - 1] ?? null;
  const page = useQuery(keyPageQuery(prefix, token));
  const pageNumber = pageTokens.length;

  let body;
  if (page.isPending) {
    body = <p className={styles.placeholder}>Loading keys…</p>;
  } else if (page.isError) {
    body = (
      <div className={styles.padded}>
        <ErrorNote error={page.error} action="Listing keys" />
        {page.error instanceof ApiError && page.error.body?.code === 'PAGE_TOKEN_EXPIRED' && (
          <button type="button" className={styles.pageButton} onClick={onRestart} data-testid="scan-restart">
            Start again from the first page
          </button>
        )}
      </div>
    );
  } else if (page.data.keys.length === 0) {
    body = (
      <p className={styles.placeholder} data-testid="keys-empty">
        {prefix === '' ? 'The store holds no keys.' : `No key starts with “${prefix}”.`}
      </p>
    );
  } else {
    body = (
      <ul className={styles.keyList} data-testid="key-list">
        {page.data.keys.map((key) => {
          const id = base64FromBytes(key);
          const label = keyLabel(key);
          return (
            <li key={id}>
              <button
                type="button"
                className={`${styles.keyButton} ${id === selected ? styles.keySelected : ''}`}
                aria-current={id === selected ? 'true' : undefined}
                onClick={() => { onSelect(key); }}
                data-testid="key-row"
                data-key={label.text}
              >
                {label.binary && <span className={styles.hexTag}>hex</span>}
                {label.text}
              </button>
            </li>
          );
        })}
      </ul>
    );
  }

  return (
    <div>
      {body}
      <div className={styles.pager}>
        <button type="button" className={styles.pageButton} disabled={pageNumber <= 1} onClick={onPrevious}>
          ← Previous
        </button>
        <span className={styles.pageNumber} data-testid="page-number">
          page {pageNumber}
        </span>
        <button
          type="button"
          className={styles.pageButton}
          disabled={!page.data?.nextPageToken}
          onClick={() => {
            if (page.data?.nextPageToken) onNext(page.data.nextPageToken);
          }}
        >
          Next →
        </button>
      </div>
    </div>
  );
}
