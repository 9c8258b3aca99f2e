import { act, screen, waitFor, within } from '@testing-library/react';
import type { ClusterStatus } from '../../../api/types';
import { MockEventSource } from '../../../test/MockEventSource';
import { membershipFrames, replay, type RecordedFrame } from '../../../test/recorded';
import recorded from '../../../test/recorded/cluster.json';
import { serveRecorded } from '../../../test/recordedApi';
import { renderWithQuery } from '../../../test/render';
import { ClusterPage } from './ClusterPage';

// What a real three-node cluster sent the Cluster view (e2e/record-fixtures.mjs,
// SCENARIOS=membership): node 1 led, handed leadership to node 2, node 3 was removed,
// added back (a learner) and promoted, under a light write load; and the answers of
// GET /v1/cluster/status and /v1/cluster/members on a fresh cluster
// (scripts/record-payloads.mjs, RECORD_ONLY=cluster).

const statusFrames = membershipFrames.filter((f) => f.event === 'status');

function statusOf(frame: RecordedFrame | undefined): ClusterStatus {
  if (!frame) throw new Error('the recording lacks this frame');
  return frame.data as ClusterStatus;
}

/** The frames up to and including the first that `stop` accepts. */
function through(stop: (frame: RecordedFrame) => boolean): RecordedFrame[] {
  const end = membershipFrames.findIndex(stop);
  if (end < 0) throw new Error('the recording lacks this frame');
  return membershipFrames.slice(0, end + 1);
}

const hasNode = (frame: RecordedFrame, id: number, role?: string) =>
  frame.event === 'status' && statusOf(frame).nodes.some((n) => n.id === id && (role === undefined || n.role === role));

beforeEach(() => {
  MockEventSource.reset();
  vi.stubGlobal('fetch', vi.fn(() => Promise.resolve(new Response('no healthy upstream', { status: 503 }))));
});

describe('ClusterPage on a real cluster’s stream', () => {
  it('ends where the cluster ended: node 2 leads three healthy voters, every row as the nodes reported it', () => {
    // Proves the table, the summary and the raft events follow the recorded stream to its
    // last frame: the leader highlight on node 2 alone, each row's role, term and indexes
    // as the last status gave them, the cluster id, and the members' raft events newest
    // first (the promotion's membership change on top, the transfer's election below).
    renderWithQuery(<ClusterPage />);
    replay(MockEventSource.latest(), membershipFrames);
    const last = statusOf(statusFrames.at(-1));
    expect(last.leader_id).toBe(2);
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'live');
    expect(screen.getByTestId('cluster-leader')).toHaveTextContent(`node 2${last.nodes[1]?.address ?? ''}`);
    expect(screen.getByTestId('cluster-term')).toHaveTextContent(String(last.term));
    expect(screen.getByTestId('cluster-id')).toHaveTextContent(`cluster ${last.cluster_id}`);
    expect(screen.getByTestId('cluster-healthy')).toHaveTextContent('3 / 3');
    for (const node of last.nodes) {
      const row = screen.getByTestId(`node-row-${node.id}`);
      expect(row).toHaveAttribute('data-leader', String(node.id === 2));
      expect(row).toHaveAttribute('data-role', node.role);
      expect(row).toHaveAttribute('data-healthy', 'true');
      expect(within(row).getByText(node.address)).toBeInTheDocument();
      expect(row).toHaveTextContent(node.commit_index.toLocaleString('en-US'));
    }
    expect(screen.queryByTestId('node-joining-3')).not.toBeInTheDocument();

    const events = within(screen.getByRole('list', { name: 'Recent raft events' })).getAllByTestId('raft-event');
    const raft = membershipFrames.filter((f) => f.event === 'raft');
    expect(events).toHaveLength(raft.length);
    expect(events[0]).toHaveAttribute('data-kind', 'membership_changed');
    expect(events[0]).toHaveTextContent('Membership changed: voters [1, 2, 3] learners []');
    const texts = events.map((e) => e.textContent);
    expect(texts.some((text) => /Node 2 elected leader after \d+ ms/.test(text))).toBe(true);
    expect(texts.some((text) => text.includes('Leader lost'))).toBe(true);
  });

  it('drops the removed member from the table, then shows it joining again as a learner', () => {
    // Proves the view follows the membership change frame by frame: once the status
    // leaves node 3 out, its row is gone and the healthy count is of two; when node 3 is
    // back it is a learner, caught up and said to be ready to promote; the raft events
    // name each configuration.
    renderWithQuery(<ClusterPage />);
    const source = MockEventSource.latest();
    const removed = through((f) => f.event === 'status' && !hasNode(f, 3));
    replay(source, removed);
    expect(screen.queryByTestId('node-row-3')).not.toBeInTheDocument();
    expect(screen.getByTestId('node-row-1')).toBeInTheDocument();
    expect(screen.getByTestId('cluster-healthy')).toHaveTextContent('2 / 2');
    expect(screen.getAllByTestId('raft-event')[0]).toHaveTextContent('voters [1, 2] learners []');

    const learner = through((f) => hasNode(f, 3, 'learner'));
    replay(source, learner.slice(removed.length));
    const row = screen.getByTestId('node-row-3');
    expect(row).toHaveAttribute('data-role', 'learner');
    expect(row).toHaveAttribute('data-leader', 'false');
    expect(screen.getByTestId('node-joining-3')).toHaveTextContent('caught up: ready to promote');
    expect(screen.getByTestId('cluster-healthy')).toHaveTextContent('3 / 3');
  });

  it('moves the leader highlight with the transfer, through the moment without a leader', () => {
    // Proves the transfer as the stream told it: node 1 led; a status without a leader
    // shows "none" and no highlighted row; then node 2 is highlighted and node 1 follows.
    renderWithQuery(<ClusterPage />);
    const source = MockEventSource.latest();
    const first = statusOf(statusFrames[0]);
    expect(first.leader_id).toBe(1);
    const leaderless = through((f) => f.event === 'status' && statusOf(f).leader_id === 0);
    replay(source, leaderless.slice(0, -1));
    expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-leader', 'true');
    replay(source, leaderless.slice(-1));
    expect(screen.getByTestId('cluster-leader')).toHaveTextContent('none');
    expect(document.querySelectorAll('[data-leader="true"][data-testid^="node-row-"]')).toHaveLength(0);
    const moved = through((f) => f.event === 'status' && statusOf(f).leader_id === 2);
    replay(source, moved.slice(leaderless.length));
    expect(screen.getByTestId('node-row-2')).toHaveAttribute('data-leader', 'true');
    expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-role', 'follower');
  });

  it('draws replication and the canary from the recorded stats', () => {
    // Proves the stats frames reach the details and the canary: node 2 (the leader)
    // replicates to nodes 1 and 3 with the lag it reported, every card shows its term and
    // voters, and every node's canary found its checked windows linearizable.
    renderWithQuery(<ClusterPage />);
    replay(MockEventSource.latest(), membershipFrames);
    expect(screen.getByTestId('node-detail-2')).toHaveAttribute('data-leader', 'true');
    expect(screen.getByTestId('replication-diagram')).toHaveAccessibleName('node 2 replicates to node 1, node 3');
    const stats = [...membershipFrames].reverse().find((f) => f.event === 'stats')?.data as {
      nodes: { id: number; stats: { raft: { members: { member: number; lag_entries: number }[] }; canary: { windows_ok: number } } }[];
    };
    const leader = stats.nodes.find((n) => n.id === 2);
    for (const p of leader?.stats.raft.members ?? []) {
      expect(screen.getByTestId(`lag-${p.member}`)).toHaveTextContent(new RegExp(`^${p.lag_entries} entries`));
    }
    for (const node of stats.nodes) {
      expect(within(screen.getByTestId(`node-detail-${node.id}`)).getByText('3 voters')).toBeInTheDocument();
      const canary = screen.getByTestId(`canary-${node.id}`);
      expect(canary).toHaveAttribute('data-verdict', 'ok');
      expect(canary).toHaveTextContent(`${node.stats.canary.windows_ok} / 0 / 0`);
    }
  });

  it('shows the recorded GET /v1/cluster/status as a snapshot while the stream is reopened', async () => {
    // Proves the fallback on a real answer: after one frame the stream is refused; the
    // view asks GET /v1/cluster/status and shows that answer (node 1 leading a fresh
    // cluster, three healthy voters) marked as a snapshot, the indicator still reconnecting.
    const api = serveRecorded([{ method: 'GET', url: '/v1/cluster/status', answer: recorded.status }]);
    renderWithQuery(<ClusterPage events={{ reconnectDelaysMs: [60_000], silenceLimitMs: 60_000 }} />);
    const transferred = statusFrames.find((f) => statusOf(f).leader_id === 2);
    act(() => {
      MockEventSource.latest().emit('status', transferred?.data);
    });
    expect(screen.getByTestId('node-row-2')).toHaveAttribute('data-leader', 'true');
    act(() => {
      MockEventSource.latest().fail({ closed: true });
    });
    await waitFor(() => {
      expect(screen.getByTestId('node-row-1')).toHaveAttribute('data-leader', 'true');
    });
    expect(api.requests('GET', '/v1/cluster/status')).toHaveLength(1);
    expect(screen.getByTestId('status-updated')).toHaveTextContent('snapshot');
    expect(screen.getByTestId('cluster-id')).toHaveTextContent(`cluster ${recorded.status.body.cluster_id}`);
    expect(screen.getByTestId('cluster-healthy')).toHaveTextContent('3 / 3');
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'reconnecting');
  });
});
