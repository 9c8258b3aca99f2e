import { screen, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import { failoverFrames, replay } from '../../../test/recorded';
import { renderWithQuery } from '../../../test/render';
import { ElectionsPage } from './ElectionsPage';

beforeEach(() => {
  MockEventSource.reset();
});

describe('ElectionsPage', () => {
  it('shows a connecting state before any frame', () => {
    // Proves the empty state: no terms are invented before the stream delivers.
    renderWithQuery(<ElectionsPage />);
    expect(screen.getByText(/Connecting to the cluster event stream/)).toBeInTheDocument();
    expect(screen.queryByTestId('term-timeline')).not.toBeInTheDocument();
  });

  it('draws the failover a real cluster went through: new leader, why, and the leaderless window', () => {
    // Proves, on frames recorded around kill -9 of node 3 (the leader in term 9): node 1
    // leads term 10 now; the last election says node 1 stood because it lost its leader,
    // asked for pre-votes first, and how long the cluster had no leader; the timeline has
    // a bar for each leader the members remember, and a gap before term 10.
    renderWithQuery(<ElectionsPage />);
    replay(MockEventSource.latest(), failoverFrames);
    expect(screen.getByTestId('elections-current-leader')).toHaveAttribute('data-leader', '1');
    const last = screen.getByTestId('last-failover');
    expect(last).toHaveAttribute('data-term', '10');
    expect(last).toHaveAttribute('data-leader', '1');
    expect(last).toHaveAttribute('data-reason', 'leader_lost');
    const leaderless = Number(last.getAttribute('data-leaderless-ms'));
    expect(leaderless).toBeGreaterThan(0);
    expect(leaderless).toBeLessThan(5_000);
    expect(last).toHaveTextContent('pre-vote first');

    const row = screen.getByTestId('term-row-10');
    expect(row).toHaveAttribute('data-leader', '1');
    expect(within(row).getByText('leader lost')).toBeInTheDocument();
    const eras = within(screen.getByTestId('term-timeline')).getAllByTestId('timeline-era');
    expect(eras.at(-1)).toHaveAttribute('data-term', '10');
    expect(eras.some((e) => e.getAttribute('data-leader') === '3')).toBe(true);
    expect(within(screen.getByTestId('term-timeline')).getAllByTestId('timeline-gap').length).toBeGreaterThan(0);
  });

  it('counts the elections every member started, by reason', () => {
    // Proves the per-reason counters of the stats are summed over the members that
    // answered: in the last recorded frame node 1 counted 3 timeouts and 1 lost leader,
    // node 2 one timeout and 4 lost leaders, and node 3 (killed) nothing.
    renderWithQuery(<ElectionsPage />);
    replay(MockEventSource.latest(), failoverFrames);
    expect(screen.getByTestId('election-count')).toHaveTextContent('9');
    expect(screen.getByTestId('election-reasons')).toHaveTextContent('4 timeout · 5 leader lost');
  });
});
