import { useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { Panel } from '../../../components/Panel';
import { base64FromBytes } from '../api/bytes';
import { casDraft, type TxnDraft } from '../api/txn';
import { CasForm } from './CasForm';
import { ChangeFeed } from './ChangeFeed';
import { KeyList } from './KeyList';
import page from '../../../components/Page.module.css';
import styles from './KeysPage.module.css';
import { PutForm } from './PutForm';
import { TxnForm } from './TxnForm';
import { ValueViewer } from './ValueViewer';

/** Browse keys by prefix, read a value, put, delete, compare-and-swap and run transactions. */
export function KeysPage() {
  const [draftPrefix, setDraftPrefix] = useState('');
  const [prefix, setPrefix] = useState('');
  // One token per page visited; the first page has none.
  const [pageTokens, setPageTokens] = useState<(string | null)[]>([null]);
  const [selected, setSelected] = useState<Uint8Array | null>(null);
  // The transaction form starts afresh (a new key) from each prefill.
  const [txnStart, setTxnStart] = useState<{ n: number; draft?: TxnDraft }>({ n: 0 });

  function browse(event: SyntheticEvent) {
    event.preventDefault();
    setPrefix(draftPrefix);
    setPageTokens([null]);
  }

  // Every page of one scan shows the state its first page read; after a write the list
  // starts again from the first page, so it shows the write.
  function restart() {
    setPageTokens([null]);
  }

  const selectedId = selected ? base64FromBytes(selected) : null;

  return (
    <div className={page.page}>
      <h1 className={page.title}>Keys</h1>
      <div className={styles.columns}>
        <div className={styles.side}>
          <Panel title="Browse">
            <form className={styles.search} onSubmit={browse} role="search">
              <label className={controls.field}>
                Prefix
                <input
                  className={controls.input}
                  value={draftPrefix}
                  onChange={(e) => { setDraftPrefix(e.target.value); }}
                  placeholder="every key"
                  name="prefix"
                />
              </label>
              <button type="submit" className={controls.button}>
                Browse
              </button>
            </form>
            <KeyList
              prefix={prefix}
              pageTokens={pageTokens}
              selected={selectedId}
              onSelect={setSelected}
              onNext={(token) => { setPageTokens((tokens) => [...tokens, token]); }}
              onPrevious={() => { setPageTokens((tokens) => (tokens.length > 1 ? tokens.slice(0, -1) : tokens)); }}
              onRestart={restart}
            />
          </Panel>
          <Panel title="Changes">
            <ChangeFeed key={prefix} prefix={prefix} />
          </Panel>
        </div>

        <div className={styles.side}>
          <Panel title="Value">
            {selected && selectedId ? (
              <ValueViewer
                key={selectedId}
                keyBytes={selected}
                onCompareAndSwap={(seed) => {
                  setTxnStart((start) => ({ n: start.n + 1, draft: casDraft(seed) }));
                  document.getElementById('txn-panel')?.scrollIntoView({ behavior: 'smooth', block: 'start' });
                }}
                onDeleted={() => {
                  setSelected(null);
                  restart();
                }}
              />
            ) : (
              <p className={styles.placeholder}>Pick a key to read its value.</p>
            )}
          </Panel>
          <div className={styles.forms}>
            <Panel title="Put">
              <PutForm
                onStored={(key) => {
                  setSelected(key);
                  restart();
                }}
              />
            </Panel>
            <Panel title="Compare and swap">
              <CasForm onSwapped={restart} />
            </Panel>
          </div>
        </div>
      </div>
      <div id="txn-panel">
        <Panel title="Transaction">
          <TxnForm key={txnStart.n} initial={txnStart.draft} onRan={restart} />
        </Panel>
      </div>
    </div>
  );
}
