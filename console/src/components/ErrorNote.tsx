import { ApiError } from '../api/http';
import styles from './ErrorNote.module.css';

interface ErrorNoteProps {
  error: unknown;
  /** What was being done, e.g. "Reading the value". */
  action?: string;
}

/**
 * An error as the API gave it: the node's code and message verbatim, with the HTTP
 * status; for an answer without the node's body (a gateway error), the status and text.
 */
export function ErrorNote({ error, action }: ErrorNoteProps) {
  let code: string | null = null;
  let message: string;
  let status: number | null = null;
  if (error instanceof ApiError) {
    status = error.status;
    code = error.body?.code ?? null;
    message = error.body?.message ?? error.message;
  } else {
    message = error instanceof Error ? error.message : String(error);
  }
  return (
    <div role="alert" className={styles.note} data-testid="api-error" data-code={code ?? ''}>
      {action && <span className={styles.action}>{action} failed: </span>}
      {code && <code className={styles.code}>{code}</code>}
      {status !== null && <span className={styles.status}>HTTP {status}</span>}
      <span className={styles.message}>{message}</span>
    </div>
  );
}
