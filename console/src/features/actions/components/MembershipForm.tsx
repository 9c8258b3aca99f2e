import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ConfirmBar } from '../../../components/ConfirmBar';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { changeImpact, type MembershipChange } from '../api/faultTolerance';
import { addMember, membersQuery, promoteMember, removeMember } from '../api/members';
import type { Member, Members } from '../api/types';
import styles from './ActionsPage.module.css';

type Kind = MembershipChange['kind'];

const KIND_LABEL: Record<Kind, string> = {
  add: 'Add a learner',
  promote: 'Promote a learner to voter',
  remove: 'Remove a member',
  replace: 'Replace a voter with a learner',
};

interface MembershipFormProps {
  members: readonly Member[];
  /** Voters that do not answer now: they count against the quorum already. */
  downIds: ReadonlySet<number>;
}

function run(change: MembershipChange): Promise<Members> {
  switch (change.kind) {
    case 'add':
      return addMember({ id: change.id, address: change.address });
    case 'promote':
      return promoteMember(change.id);
    case 'remove':
      return removeMember(change.id);
    case 'replace':
      return promoteMember(change.id, change.replaces);
  }
}

function describe(change: MembershipChange): string {
  switch (change.kind) {
    case 'add':
      return `Add node ${change.id} (${change.address}) as a learner.`;
    case 'promote':
      return `Promote learner ${change.id} to voter.`;
    case 'remove':
      return `Remove ${change.voter ? 'voter' : 'learner'} ${change.id} from the cluster.`;
    case 'replace':
      return `Promote learner ${change.id} and remove voter ${change.replaces}, in one joint change.`;
  }
}

/**
 * Add, promote, remove or replace a member. Nothing is sent until the operator has
 * read what the change does to fault tolerance and confirmed it.
 */
export function MembershipForm({ members, downIds }: MembershipFormProps) {
  const client = useQueryClient();
  const [kind, setKind] = useState<Kind>('remove');
  const [newId, setNewId] = useState('');
  const [address, setAddress] = useState('');
  const [subject, setSubject] = useState('');
  const [replaced, setReplaced] = useState('');
  const [pending, setPending] = useState<MembershipChange | null>(null);

  const voters = members.filter((m) => m.voter);
  const learners = members.filter((m) => !m.voter);
  const voterIds = voters.map((m) => m.id);
  const subjects = kind === 'remove' ? members : kind === 'add' ? [] : learners;
  const subjectId = subjects.some((m) => String(m.id) === subject) ? subject : String(subjects[0]?.id ?? '');
  const replacedId = voters.some((m) => String(m.id) === replaced) ? replaced : String(voters[0]?.id ?? '');

  const change = useMutation({
    mutationFn: run,
    onSuccess: (result) => {
      client.setQueryData(membersQuery.queryKey, result);
      setPending(null);
    },
  });

  function draft(): MembershipChange | null {
    if (kind === 'add') {
      const id = Number(newId);
      if (!Number.isSafeInteger(id) || id <= 0 || address.trim() === '') return null;
      return { kind, id, address: address.trim() };
    }
    if (subjectId === '') return null;
    const id = Number(subjectId);
    if (kind === 'remove') return { kind, id, voter: voters.some((m) => m.id === id) };
    if (kind === 'promote') return { kind, id };
    if (replacedId === '') return null;
    return { kind, id, replaces: Number(replacedId) };
  }
  const next = draft();
  const impact = pending ? changeImpact(voterIds, downIds, pending) : null;

  return (
    <div className={controls.form} data-testid="membership-form">
      <label className={controls.field}>
        Change
        <select
          className={controls.select}
          value={kind}
          onChange={(e) => {
            setKind(e.target.value as Kind);
            setPending(null);
            change.reset();
          }}
          name="change"
        >
          {(Object.keys(KIND_LABEL) as Kind[]).map((k) => (
            <option key={k} value={k}>
              {KIND_LABEL[k]}
            </option>
          ))}
        </select>
      </label>

      {kind === 'add' ? (
        <div className={controls.row}>
          <label className={controls.field}>
            Node id
            <input className={controls.input} value={newId} onChange={(e) => { setNewId(e.target.value); }} inputMode="numeric" name="id" />
          </label>
          <label className={`${controls.field} ${styles.grow}`}>
            Address (host:port)
            <input className={controls.input} value={address} onChange={(e) => { setAddress(e.target.value); }} name="address" />
          </label>
        </div>
      ) : (
        <div className={controls.row}>
          <label className={controls.field}>
            {kind === 'remove' ? 'Member' : 'Learner'}
            <select className={controls.select} value={subjectId} onChange={(e) => { setSubject(e.target.value); }} name="subject">
              {subjects.map((m) => (
                <option key={m.id} value={m.id}>
                  node {m.id} ({m.voter ? 'voter' : 'learner'})
                </option>
              ))}
            </select>
          </label>
          {kind === 'replace' && (
            <label className={controls.field}>
              Voter to remove
              <select className={controls.select} value={replacedId} onChange={(e) => { setReplaced(e.target.value); }} name="replaced">
                {voters.map((m) => (
                  <option key={m.id} value={m.id}>
                    node {m.id}
                  </option>
                ))}
              </select>
            </label>
          )}
        </div>
      )}
      {kind !== 'add' && subjects.length === 0 && (
        <p className={controls.hint}>There is no learner; add one first.</p>
      )}
      {kind === 'add' && (
        <p className={controls.hint}>
          The node must be running at that address (a new one started with <code>--join</code>); it catches up as a
          learner and votes once promoted.
        </p>
      )}

      <div className={controls.row}>
        <button
          type="button"
          className={`${controls.button} ${controls.primary}`}
          disabled={next === null || pending !== null}
          onClick={() => {
            change.reset();
            setPending(next);
          }}
          data-testid="review-change"
        >
          Review change
        </button>
      </div>

      {pending && impact && (
        <ConfirmBar
          confirmLabel="Apply change"
          tone={impact.weakens ? 'danger' : 'primary'}
          busy={change.isPending}
          onConfirm={() => { change.mutate(pending); }}
          onCancel={() => { setPending(null); }}
        >
          <p className={styles.confirmLine}>{describe(pending)}</p>
          <p className={styles.confirmLine} data-testid="impact-summary">
            <strong>{impact.summary}</strong>
          </p>
          <p className={styles.confirmNumbers} data-testid="impact-numbers">
            {impact.numbers}
          </p>
        </ConfirmBar>
      )}
      {change.isError && <ErrorNote error={change.error} action="The change" />}
      {change.isSuccess && (
        <p className={controls.ok} role="status" data-testid="change-ok">
          Applied. Members now:{' '}
          {change.data.members.map((m) => `${m.id} (${m.voter ? 'voter' : 'learner'})`).join(', ')}.
        </p>
      )}
    </div>
  );
}
