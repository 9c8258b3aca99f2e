import { act, screen, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import { replay, storageFrames } from '../../../test/recorded';
import { renderWithQuery } from '../../../test/render';
import { StoragePage } from './StoragePage';

beforeEach(() => {
  MockEventSource.reset();
});

describe('StoragePage', () => {
  it('says it is waiting until the first stats frame arrives', () => {
    // Proves the empty state: a connected stream without numbers yet shows no node cards.
    renderWithQuery(<StoragePage />);
    expect(MockEventSource.latest().url).toBe('/v1/cluster/events');
    expect(screen.getByText(/Waiting for the first stats/)).toBeInTheDocument();
    expect(screen.queryByTestId('storage-node-1')).not.toBeInTheDocument();
  });

  it('shows every node’s tree, its limits and the compactions a real cluster reported', () => {
    // Proves, on frames recorded while a real cluster flushed and compacted: one card per
    // node with its levels (L0 and L1 tables), level 0 measured against the stop limit the
    // node reports, finished L0 → L1 compactions with their bytes, and amplification.
    renderWithQuery(<StoragePage />);
    replay(MockEventSource.latest(), storageFrames);
    for (const id of [1, 2, 3]) {
      const card = screen.getByTestId(`storage-node-${id}`);
      expect(card).toHaveAttribute('data-reachable', 'true');
      expect(screen.getByTestId(`level-${id}-1`)).toHaveAttribute('data-files', '1');
      expect(Number(screen.getByTestId(`level-${id}-0`).getAttribute('data-files'))).toBeGreaterThan(0);
      expect(within(card).getByText(/stops at 12/)).toBeInTheDocument();
      const done = within(card)
        .getAllByTestId('compaction')
        .filter((row) => row.getAttribute('data-state') === 'done');
      expect(done.length).toBeGreaterThan(0);
      expect(done[0]).toHaveTextContent('L0 → L1');
      expect(within(card).getByText('Write amplification').nextSibling?.textContent).toMatch(/×$/);
    }
  });

  it('charts compaction bytes from pairs of stats frames', () => {
    // Proves the counters become a series in the browser: with the recorded frames (one a
    // second) the chart has a point for each pair of frames after the first.
    renderWithQuery(<StoragePage />);
    replay(MockEventSource.latest(), storageFrames);
    const frames = storageFrames.filter((f) => f.event === 'stats').length;
    const points = Number(screen.getByTestId('compaction-chart').getAttribute('data-points'));
    expect(points).toBeGreaterThanOrEqual(frames - 2);
    expect(points).toBeLessThanOrEqual(frames - 1);
  });

  it('keeps the cards but marks the stream as reconnecting when it fails', () => {
    // Proves the error state: the last numbers stay on screen and the indicator says so.
    renderWithQuery(<StoragePage stream={{ reconnectDelaysMs: [10_000] }} />);
    const source = MockEventSource.latest();
    replay(source, storageFrames);
    act(() => {
      source.fail({ closed: true });
    });
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'reconnecting');
    expect(screen.getByTestId('storage-node-1')).toBeInTheDocument();
  });
});
