import { ApiError } from '../api/http';
import styles from './ErrorNote.module.css';

interface ErrorNoteProps {
  error: unknown;
  /** What was being done, e.g. "Reading the value". */
  action?: string;
}

/**
 * What to do about a refusal, from who the refused request ran as: sign in (401 without a
 * token), sign in again (401 for a token), or a token of a larger role (403).
 */
function authHint(error: ApiError): string | null {
  const sentAs = error.sentAs;
  if (error.status === 401) {
    return sentAs.kind === 'anonymous'
      ? 'Sign in (top right) with a token whose role allows this.'
      : 'The token was refused: sign in again with a valid one.';
  }
  if (error.status === 403) {
    return sentAs.kind === 'token'
      ? `The role of the token sent (${sentAs.claims.role}, ${sentAs.claims.sub}) is not enough for this: sign in with a token of a larger role.`
      : 'The role is not enough for this: sign in with a token of a larger role.';
  }
  return null;
}

/**
 * An error as the API gave it: the node's code and message verbatim, with the HTTP
 * status; for an answer without the node's body (a gateway error), the status and text.
 * A refusal (401, 403) adds a hint about signing in.
 */
export function ErrorNote({ error, action }: ErrorNoteProps) {
  let code: string | null = null;
  let message: string;
  let status: number | null = null;
  let hint: string | null = null;
  if (error instanceof ApiError) {
    status = error.status;
    hint = authHint(error);
    code = error.body?.code ?? null;
    message = error.body?.message ?? error.message;
  } else {
    message = error instanceof Error ? error.message : String(error);
  }
  return (
    <div role="alert" className={styles.note} data-testid="api-error" data-code={code ?? ''} data-status={status ?? ''}>
      {action && <span className={styles.action}>{action} failed: </span>}
      {code && <code className={styles.code}>{code}</code>}
      {status !== null && <span className={styles.status}>HTTP {status}</span>}
      <span className={styles.message}>{message}</span>
      {hint && (
        <span className={styles.hint} data-testid="auth-hint">
          {hint}
        </span>
      )}
    </div>
  );
}
