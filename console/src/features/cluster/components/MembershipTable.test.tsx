import { render, screen, within } from '@testing-library/react';
import { clusterStatus } from '../../../test/fixtures';
import recordedActions from '../../../test/recorded/actions.json';
import { MembershipTable } from './MembershipTable';

describe('MembershipTable', () => {
  it('renders one row per node with its address, role, term and indexes', () => {
    render(<MembershipTable status={clusterStatus(2, 7, { 3: { applied_index: 40 } })} />);
    const table = screen.getByRole('table', { name: 'Cluster members' });
    // Header row + three nodes.
    expect(within(table).getAllByRole('row')).toHaveLength(4);

    const row3 = screen.getByTestId('node-row-3');
    expect(row3).toHaveTextContent('node 3');
    expect(row3).toHaveTextContent('127.0.0.1:7003');
    expect(within(row3).getByTestId('node-role-3')).toHaveTextContent('follower');
    expect(row3).toHaveTextContent('7');
    expect(row3).toHaveTextContent('42');
    // Applied 40 against the leader's commit 42: two entries behind.
    expect(row3).toHaveTextContent('−2');
  });

  it('highlights the leader row and only that row', () => {
    render(<MembershipTable status={clusterStatus(2)} />);
    const leader = screen.getByTestId('node-row-2');
    expect(leader).toHaveAttribute('data-leader', 'true');
    expect(leader).toHaveAttribute('aria-current', 'true');
    expect(within(leader).getByTestId('node-role-2')).toHaveTextContent('leader');

    for (const id of [1, 3]) {
      const row = screen.getByTestId(`node-row-${id}`);
      expect(row).toHaveAttribute('data-leader', 'false');
      expect(row).not.toHaveAttribute('aria-current');
    }
  });

  it('does not highlight an old leader still claiming leadership in a lower term', () => {
    // Node 1 was cut off in term 3 and still thinks it leads; node 2 won term 4.
    const status = clusterStatus(2, 4, { 1: { role: 'leader', term: 3 } });
    render(<MembershipTable status={status} />);
    expect(screen.getByTestId('node-row-2')).toHaveAttribute('data-leader', 'true');
    expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-leader', 'false');
    expect(screen.getByTestId('node-role-1')).toHaveTextContent('leader (stale term)');
  });

  it('says when a node with a new disk does not vote yet', () => {
    render(<MembershipTable status={clusterStatus(1, 3, { 3: { proven: false } })} />);
    expect(screen.getByTestId('node-unproven-3')).toHaveTextContent(
      'new disk: not voting until the leader vouches for it',
    );
    expect(screen.queryByTestId('node-unproven-2')).toBeNull();
  });

  it('shows an unhealthy node with its error text', () => {
    const status = clusterStatus(1, 3, {
      3: { healthy: false, role: 'unknown', error: 'peer 127.0.0.1:7003: connection refused' },
    });
    render(<MembershipTable status={status} />);
    const row = screen.getByTestId('node-row-3');
    expect(row).toHaveAttribute('data-healthy', 'false');
    expect(screen.getByTestId('node-health-3')).toHaveTextContent('unhealthy');
    expect(screen.getByTestId('node-error-3')).toHaveTextContent('peer 127.0.0.1:7003: connection refused');
    expect(screen.getByTestId('node-health-1')).toHaveTextContent('healthy');
    expect(screen.queryByTestId('node-error-1')).toBeNull();
  });

  it('highlights no row while there is no leader', () => {
    const status = clusterStatus(0, 5, { 1: { role: 'candidate' } });
    render(<MembershipTable status={status} />);
    for (const id of [1, 2, 3]) {
      expect(screen.getByTestId(`node-row-${id}`)).toHaveAttribute('data-leader', 'false');
    }
    expect(screen.getByTestId('node-role-1')).toHaveTextContent('candidate');
  });

  it('shows a learner as a member joining, and when it has caught up', () => {
    // Proves a learner that a real cluster reported (added by the Actions view, recorded)
    // reads as caught up and ready to promote, and one behind the leader's commit as joining.
    const recorded = recordedActions.statusWithLearner.body as Parameters<typeof MembershipTable>[0]['status'];
    const { unmount } = render(<MembershipTable status={recorded} />);
    const learner = recorded.nodes.find((n) => n.role === 'learner');
    if (!learner) throw new Error('the recording holds a learner');
    expect(screen.getByTestId(`node-role-${learner.id}`)).toHaveTextContent('learner');
    expect(screen.getByTestId(`node-joining-${learner.id}`)).toHaveTextContent('caught up: ready to promote');
    for (const voter of recorded.nodes.filter((n) => n.role !== 'learner')) {
      expect(screen.queryByTestId(`node-joining-${voter.id}`)).not.toBeInTheDocument();
    }
    unmount();
    render(<MembershipTable status={clusterStatus(2, 7, { 3: { role: 'learner', applied_index: 12 } })} />);
    expect(screen.getByTestId('node-joining-3')).toHaveTextContent('joining: 30 behind');
  });

  it('shows a voter that a joint change is removing as leaving, and no other', () => {
    render(<MembershipTable status={clusterStatus(1, 7, { 3: { leaving: true } })} />);
    expect(screen.getByTestId('node-leaving-3')).toHaveTextContent('leaving');
    expect(screen.getByTestId('node-role-3')).toHaveTextContent('follower');
    for (const id of [1, 2]) expect(screen.queryByTestId(`node-leaving-${id}`)).not.toBeInTheDocument();
  });
});
