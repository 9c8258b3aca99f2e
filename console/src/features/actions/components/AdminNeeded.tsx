import { useCredential, type Credential } from '../../../lib/credential';
import { useNow } from '../../../lib/useNow';
import styles from './ActionsPage.module.css';

function who(credential: Credential, nowMs: number): string | null {
  switch (credential.kind) {
    case 'anonymous':
      return 'You are not signed in (anonymous).';
    case 'unreadable':
      return 'The stored token cannot be read.';
    case 'token':
      if (credential.claims.exp * 1000 <= nowMs) return `The token of ${credential.claims.sub} has expired.`;
      return credential.claims.role === 'admin'
        ? null
        : `Signed in as ${credential.claims.sub} with the ${credential.claims.role} role.`;
  }
}

/**
 * Membership, leader transfer, compaction and snapshots need the admin role. When the
 * signed-in token has another role (or there is none) this says so; the buttons stay
 * enabled, so the node's own refusal shows when one is sent anyway.
 */
export function AdminNeeded() {
  const credential = useCredential();
  const now = useNow(15000);
  const state = who(credential, now);
  if (state === null) return null;
  return (
    <p className={styles.adminNeeded} role="note" data-testid="admin-needed">
      <strong>These actions need the admin role: sign in with an admin token.</strong> {state}
    </p>
  );
}
