import { changeImpact, describeMargin, tolerance } from './faultTolerance';

describe('tolerance', () => {
  it('counts the quorum and the failures left for common group sizes', () => {
    // Proves the arithmetic: a majority of voters is the quorum; the rest may fail.
    expect(tolerance([1], new Set())).toEqual({ voters: 1, quorum: 1, down: 0, margin: 0 });
    expect(tolerance([1, 2], new Set())).toMatchObject({ quorum: 2, margin: 0 });
    expect(tolerance([1, 2, 3], new Set())).toMatchObject({ quorum: 2, margin: 1 });
    expect(tolerance([1, 2, 3, 4, 5], new Set())).toMatchObject({ quorum: 3, margin: 2 });
  });

  it('counts voters already down against the margin, and learners not at all', () => {
    expect(tolerance([1, 2, 3], new Set([3]))).toMatchObject({ down: 1, margin: 0 });
    expect(tolerance([1, 2, 3], new Set([2, 3]))).toMatchObject({ down: 2, margin: -1 });
    expect(tolerance([1, 2, 3], new Set([4]))).toMatchObject({ down: 0, margin: 1 });
  });
});

describe('describeMargin', () => {
  it('says what the next failure does', () => {
    expect(describeMargin(0)).toBe('one more failure loses quorum');
    expect(describeMargin(1)).toBe('one more failure is survived; a second loses quorum');
    expect(describeMargin(2)).toBe('2 more failures are survived; a third loses quorum');
    expect(describeMargin(-1)).toMatch(/cannot form a quorum/);
  });
});

describe('changeImpact', () => {
  const all = new Set<number>();

  it('warns that removing a voter from three leaves no room for a failure', () => {
    const impact = changeImpact([1, 2, 3], all, { kind: 'remove', id: 3, voter: true });
    expect(impact.summary).toBe('After this, one more failure loses quorum.');
    expect(impact.numbers).toBe('Voters 3 → 2, quorum 2 → 2, failures survived 1 → 0.');
    expect(impact.weakens).toBe(true);
  });

  it('says adding or removing a learner changes nothing', () => {
    const add = changeImpact([1, 2], all, { kind: 'add', id: 3, address: 'h:1' });
    expect(add.summary).toBe('A learner does not vote: fault tolerance is unchanged, and one more failure loses quorum.');
    expect(add.weakens).toBe(false);
    const remove = changeImpact([1, 2, 3], all, { kind: 'remove', id: 4, voter: false });
    expect(remove.summary).toMatch(/^Node 4 is a learner: fault tolerance is unchanged/);
  });

  it('shows promotion to three voters gaining a failure', () => {
    const impact = changeImpact([1, 2], all, { kind: 'promote', id: 3 });
    expect(impact.summary).toBe('After this, one more failure is survived; a second loses quorum.');
    expect(impact.weakens).toBe(false);
  });

  it('shows replacing a down voter with a learner restoring the margin', () => {
    const impact = changeImpact([1, 2, 3], new Set([3]), { kind: 'replace', id: 4, replaces: 3 });
    expect(impact.before.margin).toBe(0);
    expect(impact.after.margin).toBe(1);
    expect(impact.numbers).toBe('Voters 3 → 3, quorum 2 → 2, failures survived 0 → 1.');
  });

  it('mentions voters already down', () => {
    const impact = changeImpact([1, 2, 3, 4, 5], new Set([5]), { kind: 'remove', id: 4, voter: true });
    expect(impact.numbers).toBe('Voters 5 → 4, quorum 3 → 3, failures survived 1 → 0 (1 voter already down).');
    expect(impact.summary).toBe('After this, one more failure loses quorum.');
  });
});
