import type { ReactNode } from 'react';
import styles from './Pill.module.css';

export type PillTone = 'neutral' | 'accent' | 'good' | 'warn' | 'bad';

interface PillProps {
  tone?: PillTone;
  children: ReactNode;
  testId?: string;
}

/** A small rounded label. The text always carries the meaning; colour only repeats it. */
export function Pill({ tone = 'neutral', children, testId }: PillProps) {
  return (
    <span className={`${styles.pill} ${styles[tone]}`} data-tone={tone} data-testid={testId}>
      {children}
    </span>
  );
}
