import { screen, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import { failoverFrames, incidentFrames, replay } from '../../../test/recorded';
import { renderWithQuery } from '../../../test/render';
import { ElectionsPage } from './ElectionsPage';

beforeEach(() => {
  MockEventSource.reset();
});

afterEach(() => {
  vi.useRealTimers();
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
  it('gives the failover window the gateway saw around a real failover under load', () => {
    // Proves, on frames recorded while node 3 (the leader) was killed under a write load:
    // the 503s Envoy's counters (in the stats frames) grew by in the seconds around the
    // leaderless window are summed (6 × 503, no 504) and the span of the intervals that
    // held them is given; the figure is the one the Incident view gives for the same frames.
    vi.useFakeTimers({ toFake: ['Date'] });
    renderWithQuery(<ElectionsPage />);
    replay(MockEventSource.latest(), incidentFrames, true);
    const last = screen.getByTestId('last-failover');
    expect(last).toHaveAttribute('data-leader', '1');
    const figure = screen.getByTestId('gateway-failover');
    expect(figure).toHaveAttribute('data-unavailable', '6');
    expect(figure).toHaveAttribute('data-timed-out', '0');
    const windowMs = Number(figure.getAttribute('data-window-ms'));
    // Whole intervals between stats frames (about a second each), at least one.
    expect(windowMs).toBeGreaterThanOrEqual(500);
    expect(windowMs).toBeLessThan(10_000);
    expect(figure.textContent).toMatch(/^the gateway answered 6 × 503, 0 × 504 over \d/);
  });

  it('says the gateway answered no 503 or 504 around a failover without traffic', () => {
    // Proves the figure is not invented: the failover recording had no load and its stats
    // carry no gateway counters, so the card says none are known.
    renderWithQuery(<ElectionsPage />);
    replay(MockEventSource.latest(), failoverFrames);
    const figure = screen.getByTestId('gateway-failover');
    expect(figure).toHaveTextContent('no 503 or 504 from the gateway known around it');
    expect(figure).toHaveAttribute('data-unavailable', '');
  });
});
