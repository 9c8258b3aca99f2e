import { useQuery } from '@tanstack/react-query';
import { ErrorNote } from '../../../components/ErrorNote';
import { LiveIndicator } from '../../../components/LiveIndicator';
import { Panel } from '../../../components/Panel';
import { describeMargin, tolerance } from '../api/faultTolerance';
import { membersQuery } from '../api/members';
import type { NodeStatus } from '../api/types';
import { useLiveStatus } from '../hooks/useLiveStatus';
import page from '../../../components/Page.module.css';
import styles from './ActionsPage.module.css';
import { AdminNeeded } from './AdminNeeded';
import { MaintenanceForm } from './MaintenanceForm';
import { MembersTable } from './MembersTable';
import { MembershipForm } from './MembershipForm';
import { SplitForm } from './SplitForm';
import { TransferForm } from './TransferForm';

/** Operator actions: leadership, membership, compaction and snapshots, range splits. */
export function ActionsPage() {
  const members = useQuery(membersQuery);
  const live = useLiveStatus();
  const statusById = new Map<number, NodeStatus>((live.status?.nodes ?? []).map((n) => [n.id, n]));
  const downIds = new Set(
    (live.status?.nodes ?? []).filter((n) => !n.healthy || n.role === 'unknown').map((n) => n.id),
  );
  const leaderId = live.status?.leader_id ?? 0;

  let body;
  if (members.isPending) {
    body = <p className={styles.placeholder}>Reading the configuration…</p>;
  } else if (members.isError) {
    body = (
      <div className={styles.padded}>
        <ErrorNote error={members.error} action="Reading the members" />
      </div>
    );
  } else {
    const list = members.data.members;
    const voters = list.filter((m) => m.voter);
    const now = tolerance(
      voters.map((m) => m.id),
      downIds,
    );
    body = (
      <>
        <AdminNeeded />
        <div className={styles.columns}>
          <Panel
            title="Members"
            aside={
              <span data-testid="tolerance-now">
                {now.voters} voters, quorum {now.quorum}: {describeMargin(now.margin)}
              </span>
            }
          >
            <MembersTable members={list} statusById={statusById} leaderId={leaderId} />
          </Panel>
          <Panel title="Leadership">
            <TransferForm voters={voters} leaderId={leaderId} />
          </Panel>
        </div>
        <div className={styles.columns}>
          <Panel title="Membership">
            <MembershipForm members={list} downIds={downIds} />
          </Panel>
          <Panel title="Compaction and snapshots">
            <MaintenanceForm members={list} />
          </Panel>
        </div>
        <div className={styles.columns}>
          <Panel title="Ranges">
            <SplitForm />
          </Panel>
        </div>
      </>
    );
  }

  return (
    <div className={page.page}>
      <div className={page.titleRow}>
        <h1 className={page.title}>Actions</h1>
        <LiveIndicator state={live.stream} />
      </div>
      {body}
    </div>
  );
}
