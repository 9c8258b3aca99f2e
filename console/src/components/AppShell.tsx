import type { ReactNode } from 'react';
import styles from './AppShell.module.css';
import { SignIn } from './SignIn';

export interface NavItem {
  id: string;
  label: string;
}

interface AppShellProps {
  items: readonly NavItem[];
  activeId: string;
  children: ReactNode;
}

/**
 * Header with the product name, one tab per console section (links are `#/<id>`) and who
 * the console's requests run as (sign in and out).
 */
export function AppShell({ items, activeId, children }: AppShellProps) {
  return (
    <div className={styles.shell}>
      <header className={styles.header}>
        <div className={styles.brand}>
          <img src="/favicon.svg" alt="" width={24} height={24} />
          <span className={styles.name}>Strata</span>
          <span className={styles.product}>console</span>
        </div>
        <nav aria-label="Sections" className={styles.nav}>
          <ul>
            {items.map((item) => (
              <li key={item.id}>
                <a
                  href={`#/${item.id}`}
                  className={styles.tab}
                  aria-current={item.id === activeId ? 'page' : undefined}
                >
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <SignIn />
      </header>
      <main className={styles.main}>{children}</main>
    </div>
  );
}
