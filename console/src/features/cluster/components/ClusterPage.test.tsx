import { act, screen, waitFor, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import { CLUSTER_ID, clusterStatus, raftEvent } from '../../../test/fixtures';
import { renderWithQuery } from '../../../test/render';
import type { ClusterEventsOptions } from '../hooks/useClusterEvents';
import { ClusterPage } from './ClusterPage';

// Short, stable timings so reconnects happen within a test's patience.
const FAST: ClusterEventsOptions = { reconnectDelaysMs: [20], silenceLimitMs: 5_000 };

function statusFetch(body: unknown, status = 200) {
  return vi.fn(() =>
    Promise.resolve(
      new Response(typeof body === 'string' ? body : JSON.stringify(body), {
        status,
        headers: { 'Content-Type': 'application/json' },
      }),
    ),
  );
}

function indicator() {
  return screen.getByTestId('stream-status');
}

beforeEach(() => {
  MockEventSource.reset();
  vi.stubGlobal('fetch', statusFetch('no healthy upstream', 503));
});

describe('ClusterPage', () => {
  it('subscribes to the relative cluster events URL and shows the first status', () => {
    // Proves the page opens the SSE stream on the same origin and renders its data.
    renderWithQuery(<ClusterPage events={FAST} />);
    expect(MockEventSource.latest().url).toBe('/v1/cluster/events');
    expect(indicator()).toHaveAttribute('data-state', 'connecting');

    act(() => {
      MockEventSource.latest().emit('status', clusterStatus(1));
    });
    expect(indicator()).toHaveAttribute('data-state', 'live');
    expect(indicator()).toHaveTextContent('Live');
    expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-leader', 'true');
    expect(screen.getByTestId('cluster-leader')).toHaveTextContent('node 1');
  });

  it('moves the leader highlight as soon as a status with the new leader arrives', () => {
    renderWithQuery(<ClusterPage events={FAST} />);
    const source = MockEventSource.latest();
    act(() => {
      source.emit('status', clusterStatus(1, 3));
    });
    act(() => {
      source.emit('raft', raftEvent({ kind: 'leader_changed', leader_id: 2, term: 4, duration_ms: 150 }));
      source.emit('status', clusterStatus(2, 4));
    });
    expect(screen.getByTestId('node-row-2')).toHaveAttribute('data-leader', 'true');
    expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-leader', 'false');
    expect(screen.getByTestId('cluster-term')).toHaveTextContent('4');
    expect(screen.getByTestId('cluster-id')).toHaveTextContent(`cluster ${CLUSTER_ID}`);
    const events = screen.getByRole('list', { name: 'Recent raft events' });
    expect(within(events).getByText('Node 2 elected leader after 150 ms')).toBeInTheDocument();
  });

  it('says when the cluster has no id yet', () => {
    renderWithQuery(<ClusterPage events={FAST} />);
    act(() => {
      MockEventSource.latest().emit('status', { ...clusterStatus(1, 3), cluster_id: '' });
    });
    expect(screen.getByTestId('cluster-id')).toHaveTextContent('cluster not named yet');
  });

  it('shows reconnecting when the stream errors, reconnects by itself, and clears on the next status', async () => {
    renderWithQuery(<ClusterPage events={FAST} />);
    const first = MockEventSource.latest();
    act(() => {
      first.emit('status', clusterStatus(1));
    });

    // The gateway refused the stream (e.g. 503 during an election): EventSource gives up.
    act(() => {
      first.fail({ closed: true });
    });
    expect(indicator()).toHaveAttribute('data-state', 'reconnecting');
    expect(indicator()).toHaveTextContent('Reconnecting');
    expect(first.closed).toBe(true);
    // The last known table stays visible while reconnecting.
    expect(screen.getByTestId('node-row-1')).toBeInTheDocument();

    await waitFor(() => {
      expect(MockEventSource.instances).toHaveLength(2);
    });
    const second = MockEventSource.latest();
    // Connected but nothing received yet: still not live.
    expect(indicator()).toHaveAttribute('data-state', 'reconnecting');

    act(() => {
      second.emit('status', clusterStatus(3, 4));
    });
    expect(indicator()).toHaveAttribute('data-state', 'live');
    expect(indicator()).not.toHaveTextContent('Reconnecting');
    expect(screen.getByTestId('node-row-3')).toHaveAttribute('data-leader', 'true');
  });

  it('also takes over from a stream that drops while EventSource would retry on its own', async () => {
    renderWithQuery(<ClusterPage events={FAST} />);
    const first = MockEventSource.latest();
    act(() => {
      first.emit('status', clusterStatus(1));
      first.fail({ closed: false });
    });
    expect(indicator()).toHaveAttribute('data-state', 'reconnecting');
    // Our own reconnect replaces the browser's slower one; the old source is closed.
    expect(first.closed).toBe(true);
    await waitFor(() => {
      expect(MockEventSource.instances).toHaveLength(2);
    });
  });

  it('fetches /v1/cluster/status while reconnecting and shows it as a snapshot', async () => {
    const fetchMock = statusFetch(clusterStatus(2, 9));
    vi.stubGlobal('fetch', fetchMock);
    renderWithQuery(<ClusterPage events={{ reconnectDelaysMs: [60_000], silenceLimitMs: 60_000 }} />);
    act(() => {
      MockEventSource.latest().emit('status', clusterStatus(1, 8));
      MockEventSource.latest().fail({ closed: true });
    });

    await waitFor(() => {
      expect(screen.getByTestId('node-row-2')).toHaveAttribute('data-leader', 'true');
    });
    expect(fetchMock).toHaveBeenCalledWith('/v1/cluster/status', expect.anything());
    expect(screen.getByTestId('status-updated')).toHaveTextContent('snapshot');
    // A snapshot is not the stream: the indicator keeps saying reconnecting.
    expect(indicator()).toHaveAttribute('data-state', 'reconnecting');
  });

  it('treats a silent stream as dead and reconnects', async () => {
    renderWithQuery(<ClusterPage events={{ reconnectDelaysMs: [10], silenceLimitMs: 50 }} />);
    act(() => {
      MockEventSource.latest().emit('status', clusterStatus(1));
    });
    await waitFor(() => {
      expect(indicator()).toHaveAttribute('data-state', 'reconnecting');
    });
    expect(indicator()).toHaveTextContent('no status for');
    await waitFor(() => {
      expect(MockEventSource.instances.length).toBeGreaterThanOrEqual(2);
    });
  });

  it('ignores a malformed status frame and keeps the last good table', () => {
    renderWithQuery(<ClusterPage events={FAST} />);
    const source = MockEventSource.latest();
    act(() => {
      source.emit('status', clusterStatus(1));
      source.emit('status', '{"leader_id": 2, "nodes": "oops"}');
    });
    expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-leader', 'true');
    expect(indicator()).toHaveAttribute('data-state', 'live');
  });

  it('closes the stream when the page goes away', () => {
    const { unmount } = renderWithQuery(<ClusterPage events={FAST} />);
    const source = MockEventSource.latest();
    unmount();
    expect(source.closed).toBe(true);
  });
});
