import { screen, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import { incidentFrames, replay } from '../../../test/recorded';
import { renderWithQuery } from '../../../test/render';
import { IncidentPage } from './IncidentPage';

beforeEach(() => {
  MockEventSource.reset();
  vi.useFakeTimers({ toFake: ['Date'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('IncidentPage', () => {
  it('waits for the stream before drawing anything', () => {
    // Proves the empty state.
    renderWithQuery(<IncidentPage />);
    expect(screen.getByText(/Connecting to the cluster event stream/)).toBeInTheDocument();
  });

  it('lines up a real failover under load: raft events, each node’s role, and the gateway’s 503s', () => {
    // Proves, on frames recorded while node 3 (the leader) was killed under a write load
    // (the stream itself was on node 3 and came back through another node): the summary
    // names the new leader and term, the leaderless window and the 503s the gateway
    // answered meanwhile (6, from Envoy's counters in the stats); each node has a lane
    // with its roles over time, node 3's ending down; the members' election events are
    // on the lanes; the gateway lane has a bar for the interval with the 503s.
    renderWithQuery(<IncidentPage />);
    replay(MockEventSource.latest(), incidentFrames, true);
    const summary = screen.getByTestId('incident-summary');
    expect(summary).toHaveAttribute('data-leader', '1');
    expect(summary).toHaveAttribute('data-unavailable', '6');
    expect(summary).toHaveAttribute('data-timed-out', '0');
    expect(Number(summary.getAttribute('data-leaderless-ms'))).toBeGreaterThan(0);
    expect(screen.getByTestId('gateway-window')).toHaveTextContent('6 × 503 and 0 × 504');

    const lane3 = screen.getByTestId('incident-lane-node-3');
    const roles = [...lane3.querySelectorAll('[data-role]')].map((s) => s.getAttribute('data-role'));
    expect(roles[0]).toBe('leader');
    expect(roles.at(-1)).toBe('down');
    const stood = screen.getAllByTestId('incident-event').filter((e) => e.getAttribute('data-kind') === 'election_started');
    expect(stood.length).toBeGreaterThan(0);
    expect(within(screen.getByTestId('incident-lane-gateway')).getAllByTestId('gateway-bar')).toHaveLength(1);
  });
});
