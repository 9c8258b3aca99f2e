import { Pill } from '../../../components/Pill';
import type { Member, NodeStatus } from '../api/types';
import styles from './ActionsPage.module.css';

interface MembersTableProps {
  members: readonly Member[];
  /** Each member's live view of itself, when the stream has sent one. */
  statusById: ReadonlyMap<number, NodeStatus>;
  leaderId: number;
}

/** The configuration (voters and learners) beside each member's live role and health. */
export function MembersTable({ members, statusById, leaderId }: MembersTableProps) {
  return (
    <div className={styles.tableWrap}>
      <table className={styles.table}>
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Address</th>
            <th scope="col">Membership</th>
            <th scope="col">Role</th>
            <th scope="col">Health</th>
          </tr>
        </thead>
        <tbody>
          {members.map((member) => {
            const live = statusById.get(member.id);
            const role = live?.role ?? 'unknown';
            const healthy = live?.healthy ?? false;
            return (
              <tr
                key={member.id}
                data-testid={`member-row-${member.id}`}
                data-voter={String(member.voter)}
                data-leaving={String(member.leaving)}
                data-role={role}
                className={member.id === leaderId ? styles.leaderRow : undefined}
              >
                <td className={styles.mono}>{member.id}</td>
                <td className={styles.mono}>{member.address}</td>
                <td>
                  <Pill tone={member.leaving ? 'warn' : member.voter ? 'accent' : 'neutral'}>
                    {member.leaving ? 'voter, leaving' : member.voter ? 'voter' : 'learner'}
                  </Pill>
                </td>
                <td>{member.id === leaderId ? <Pill tone="good">leader</Pill> : role}</td>
                <td>
                  {live ? (
                    <Pill tone={healthy ? 'good' : 'bad'}>{healthy ? 'healthy' : 'down'}</Pill>
                  ) : (
                    <span className={styles.muted}>no report</span>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
