import { useId, useState, type SyntheticEvent } from 'react';
import { formatDurationMs } from '../lib/format';
import { checkToken, signIn, signOut, useCredential } from '../lib/credential';
import { useNow } from '../lib/useNow';
import controls from './Controls.module.css';
import styles from './SignIn.module.css';

function expiryAt(expSeconds: number): string {
  return new Date(expSeconds * 1000).toLocaleString();
}

/** "expires in 2 h 5 min" or "expired": short, for the header; the time itself is its title. */
function expiryText(expSeconds: number, now: number): string {
  const left = expSeconds * 1000 - now;
  return left <= 0 ? 'expired' : `expires in ${formatDurationMs(left)}`;
}

/** The form to paste a token into: checked here (shape, claims, expiry) before it is kept. */
function SignInForm({ onDone }: { onDone: () => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const inputId = useId();

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    const checked = checkToken(token, Date.now());
    if (!checked.ok) {
      setError(checked.error);
      return;
    }
    signIn(token);
    onDone();
  }

  return (
    <form className={styles.popover} onSubmit={submit} aria-label="Sign in" data-testid="sign-in-form">
      <label className={controls.field} htmlFor={inputId}>
        Token
      </label>
      <textarea
        id={inputId}
        className={`${controls.textarea} ${styles.token}`}
        value={token}
        onChange={(e) => {
          setToken(e.target.value);
          setError(null);
        }}
        placeholder="eyJ…"
        spellCheck={false}
        autoComplete="off"
        name="token"
        data-testid="token-input"
        // The form opens on the operator's click; the token goes in at once.
        autoFocus
      />
      <p className={controls.hint}>
        A token of the cluster (e.g. <code>admin.token</code> in a local cluster&apos;s run directory). The console
        reads who it names, its role and its expiry; the nodes verify it.
      </p>
      {error && (
        <p role="alert" className={styles.error} data-testid="sign-in-error">
          {error}
        </p>
      )}
      <div className={controls.row}>
        <button type="submit" className={`${controls.button} ${controls.primary}`} data-testid="sign-in-submit">
          Sign in
        </button>
        <button type="button" className={controls.button} onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/**
 * Who the console's requests run as, in the header: the signed-in token's `sub`, role and
 * expiry, or "anonymous" (the nodes' anonymous role). Sign in pastes a token; sign out
 * forgets it. Queries refetch on either (the app subscribes to the token).
 */
export function SignIn() {
  const credential = useCredential();
  const now = useNow(15000);
  const [open, setOpen] = useState(false);

  if (credential.kind === 'anonymous') {
    return (
      <div className={styles.box} data-testid="credential" data-state="anonymous" data-role="">
        <span className={styles.who}>anonymous</span>
        <button
          type="button"
          className={styles.headerButton}
          aria-expanded={open}
          onClick={() => {
            setOpen((o) => !o);
          }}
          data-testid="sign-in-button"
        >
          Sign in
        </button>
        {open && (
          <SignInForm
            onDone={() => {
              setOpen(false);
            }}
          />
        )}
      </div>
    );
  }

  const expired = credential.kind === 'token' && credential.claims.exp * 1000 <= now;
  return (
    <div
      className={styles.box}
      data-testid="credential"
      data-state={credential.kind === 'unreadable' ? 'unreadable' : expired ? 'expired' : 'signed-in'}
      data-role={credential.kind === 'token' ? credential.claims.role : ''}
      data-sub={credential.kind === 'token' ? credential.claims.sub : ''}
    >
      {credential.kind === 'token' ? (
        <span className={styles.identity}>
          <span className={styles.line}>
            <span className={`${styles.who} ${styles.sub}`} data-testid="credential-sub">
              {credential.claims.sub}
            </span>
            <span
              className={styles.role}
              title={`${credential.claims.sub}, ${expiryText(credential.claims.exp, now)} (${expiryAt(credential.claims.exp)})`}
              data-testid="credential-role"
            >
              {credential.claims.role}
            </span>
          </span>
          <span
            className={expired ? styles.expired : styles.detail}
            title={expiryAt(credential.claims.exp)}
            data-testid="credential-expiry"
          >
            {expiryText(credential.claims.exp, now)}
          </span>
        </span>
      ) : (
        <span className={styles.unreadable} title={credential.error}>
          unreadable token
        </span>
      )}
      <button
        type="button"
        className={styles.headerButton}
        onClick={() => {
          signOut();
        }}
        data-testid="sign-out-button"
      >
        Sign out
      </button>
    </div>
  );
}
