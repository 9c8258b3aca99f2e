import { screen, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import { failoverFrames, replay } from '../../../test/recorded';
import { renderWithQuery } from '../../../test/render';
import { ClusterPage } from './ClusterPage';

beforeEach(() => {
  MockEventSource.reset();
  vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(new Response('no healthy upstream', { status: 503 }))));
});

describe('ClusterPage details from the stats', () => {
  it('shows each member in depth after a real failover: the leader, replication lag, the lost node', () => {
    // Proves, on frames recorded around kill -9 of the leader (node 3): node 1 is marked
    // leader; its view of node 2 (caught up) and node 3 (lacking every entry of the new
    // term, for seconds) appears as lag in entries and in time on both cards and the
    // diagram; node 3 is unreachable with the reason; the others show process facts.
    renderWithQuery(<ClusterPage />);
    replay(MockEventSource.latest(), failoverFrames);
    const leader = screen.getByTestId('node-detail-1');
    expect(leader).toHaveAttribute('data-leader', 'true');
    expect(within(leader).getByText('Uptime')).toBeInTheDocument();
    expect(within(leader).getByText('0.1.0')).toBeInTheDocument();
    expect(screen.getByTestId('lag-2')).toHaveTextContent('0 entries · 0 ms');
    expect(screen.getByTestId('lag-3')).toHaveTextContent(/^619 entries · 2\.7 s$/);
    expect(screen.getByTestId('node-detail-3')).toHaveTextContent('unreachable: tcp connect error');
    expect(within(screen.getByTestId('replicates-to-3')).getByText(/619 behind/)).toBeInTheDocument();
    expect(screen.getByTestId('replicates-to-3')).toHaveTextContent('(down)');
  });

  it('gives each member’s canary verdict with its operations and last check', () => {
    // Proves the canary panel: nodes 1 and 2 checked windows and found them linearizable;
    // node 3 could not be asked.
    renderWithQuery(<ClusterPage />);
    replay(MockEventSource.latest(), failoverFrames);
    expect(screen.getByTestId('canary-1')).toHaveAttribute('data-verdict', 'ok');
    expect(screen.getByTestId('canary-2')).toHaveAttribute('data-verdict', 'ok');
    expect(screen.getByTestId('canary-3')).toHaveAttribute('data-verdict', 'unknown');
    expect(screen.getByTestId('canary-1')).toHaveTextContent('3 / 0 / 0');
    expect(screen.getByTestId('canary-1')).toHaveTextContent(/\d{2}:\d{2}:\d{2}\.\d{3}/);
  });
});
