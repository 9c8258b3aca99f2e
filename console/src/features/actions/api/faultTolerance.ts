// What a membership change does to the cluster's fault tolerance, in numbers and in words.

export interface Tolerance {
  voters: number;
  /** Votes needed to elect a leader and commit a write. */
  quorum: number;
  /** Voters not answering now. */
  down: number;
  /** How many more voters may fail before the quorum is lost; negative when it already is. */
  margin: number;
}

export function tolerance(voterIds: readonly number[], downIds: ReadonlySet<number>): Tolerance {
  const voters = voterIds.length;
  const quorum = Math.floor(voters / 2) + 1;
  const down = voterIds.filter((id) => downIds.has(id)).length;
  return { voters, quorum, down, margin: voters - down - quorum };
}

const ORDINALS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth'];

/** The consequence of a margin, e.g. "one more failure loses quorum". */
export function describeMargin(margin: number): string {
  if (margin < 0) return 'the voters cannot form a quorum: no write or election can succeed';
  if (margin === 0) return 'one more failure loses quorum';
  const next = ORDINALS[margin] ?? `${margin + 1}th`;
  const survived = margin === 1 ? 'one more failure is survived' : `${margin} more failures are survived`;
  return `${survived}; a ${next} loses quorum`;
}

export type MembershipChange =
  | { kind: 'add'; id: number; address: string }
  | { kind: 'promote'; id: number }
  | { kind: 'remove'; id: number; voter: boolean }
  | { kind: 'replace'; id: number; replaces: number };

/** The voters after `change`, from the voters before it. */
export function votersAfter(voterIds: readonly number[], change: MembershipChange): number[] {
  switch (change.kind) {
    case 'add':
      return [...voterIds];
    case 'promote':
      return [...voterIds, change.id];
    case 'remove':
      return voterIds.filter((id) => id !== change.id);
    case 'replace':
      return [...voterIds.filter((id) => id !== change.replaces), change.id];
  }
}

export interface ChangeImpact {
  before: Tolerance;
  after: Tolerance;
  /** One sentence: "After this, one more failure loses quorum." */
  summary: string;
  /** The numbers: "Voters 3 → 2, quorum 2 → 2, failures survived 1 → 0." */
  numbers: string;
  /** The change leaves less room for failures than there is now. */
  weakens: boolean;
}

export function changeImpact(
  voterIds: readonly number[],
  downIds: ReadonlySet<number>,
  change: MembershipChange,
): ChangeImpact {
  const before = tolerance(voterIds, downIds);
  const after = tolerance(votersAfter(voterIds, change), downIds);
  const survived = (t: Tolerance) => Math.max(t.margin, 0);
  const numbers =
    `Voters ${before.voters} → ${after.voters}, quorum ${before.quorum} → ${after.quorum}, ` +
    `failures survived ${survived(before)} → ${survived(after)}` +
    (after.down > 0 ? ` (${after.down} voter${after.down === 1 ? '' : 's'} already down).` : '.');
  let summary = `After this, ${describeMargin(after.margin)}.`;
  if (change.kind === 'add') {
    summary = `A learner does not vote: fault tolerance is unchanged, and ${describeMargin(after.margin)}.`;
  } else if (change.kind === 'remove' && !change.voter) {
    summary = `Node ${change.id} is a learner: fault tolerance is unchanged, and ${describeMargin(after.margin)}.`;
  }
  return { before, after, summary, numbers, weakens: after.margin < before.margin };
}
