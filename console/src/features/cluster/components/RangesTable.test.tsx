import { render, screen, within } from '@testing-library/react';
import { clusterStatus } from '../../../test/fixtures';
import { RangesTable } from './RangesTable';

describe('RangesTable', () => {
  it('lists each range with its keys, leader, term, voters and learners', () => {
    render(<RangesTable status={clusterStatus(2, 7)} />);
    const table = screen.getByRole('table', { name: 'Ranges' });
    expect(within(table).getAllByRole('row')).toHaveLength(2);
    const row = screen.getByTestId('range-row-1');
    expect(row).toHaveAttribute('data-leader', '2');
    expect(row).toHaveTextContent('first key → last key');
    expect(row).toHaveTextContent('node 2');
    expect(row).toHaveTextContent('7');
    expect(row).toHaveTextContent('1, 2, 3');
  });

  it('counts per node the ranges it holds and leads', () => {
    const status = clusterStatus(1);
    const whole = { id: 1, start: '', end: '', encoding: 'utf8' as const, voters: [1, 2, 3], learners: [] as number[] };
    status.ranges = [
      { ...whole, end: 'm', leader_id: 1, term: 3 },
      { ...whole, id: 2, start: 'm', voters: [1, 2], learners: [3], leader_id: 1, term: 3 },
    ];
    render(<RangesTable status={status} />);
    expect(screen.getByTestId('range-row-2')).toHaveTextContent('m → last key');
    expect(screen.getByTestId('range-load-1')).toHaveAttribute('data-leads', '2');
    expect(screen.getByTestId('range-load-3')).toHaveAttribute('data-ranges', '2');
    expect(screen.getByTestId('range-load-2')).toHaveAttribute('data-leads', '0');
  });

  it('says so when the cluster reports no ranges', () => {
    const status = clusterStatus(1);
    status.ranges = [];
    render(<RangesTable status={status} />);
    expect(screen.getByText('The cluster reported no ranges.')).toBeInTheDocument();
  });
});
