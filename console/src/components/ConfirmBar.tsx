import type { ReactNode } from 'react';
import styles from './ConfirmBar.module.css';
import controls from './Controls.module.css';

interface ConfirmBarProps {
  /** What will happen, in plain words. */
  children: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
  tone?: 'danger' | 'primary';
}

/**
 * An inline confirmation: nothing destructive happens until the operator reads what
 * will happen and presses the confirm button. Focus goes to Cancel, the safe choice.
 */
export function ConfirmBar({ children, confirmLabel, onConfirm, onCancel, busy = false, tone = 'danger' }: ConfirmBarProps) {
  return (
    <div role="alertdialog" aria-label={confirmLabel} className={styles.bar} data-testid="confirm">
      <div className={styles.text}>{children}</div>
      <div className={styles.buttons}>
        <button type="button" className={controls.button} onClick={onCancel} disabled={busy} autoFocus>
          Cancel
        </button>
        <button
          type="button"
          className={`${controls.button} ${tone === 'danger' ? controls.danger : controls.primary}`}
          onClick={onConfirm}
          disabled={busy}
          data-testid="confirm-button"
        >
          {busy ? 'Working…' : confirmLabel}
        </button>
      </div>
    </div>
  );
}
