import { clusterStatus, raftEvent } from '../../../test/fixtures';
import {
  clusterLiveReducer,
  initialClusterLiveState,
  MAX_RAFT_EVENTS,
  type ClusterLiveAction,
  type ClusterLiveState,
} from './clusterLiveReducer';

function run(actions: ClusterLiveAction[], from: ClusterLiveState = initialClusterLiveState): ClusterLiveState {
  return actions.reduce(clusterLiveReducer, from);
}

describe('clusterLiveReducer', () => {
  it('status event replaces the whole status, not merges it', () => {
    // A node that left the cluster must disappear, which only a full replace guarantees.
    const first = clusterStatus(1, 3);
    const second = { ...clusterStatus(2, 4), nodes: clusterStatus(2, 4).nodes.slice(0, 2) };
    const state = run([
      { type: 'stream-status', status: first, receivedAtMs: 1 },
      { type: 'stream-status', status: second, receivedAtMs: 2 },
    ]);
    expect(state.status).toBe(second);
    expect(state.status?.nodes).toHaveLength(2);
    expect(state.statusReceivedAtMs).toBe(2);
    expect(state.statusSource).toBe('stream');
    expect(state.stream).toBe('live');
  });

  it('raft events append in arrival order', () => {
    const a = raftEvent({ at_ms: 1, term: 4 });
    const b = raftEvent({ at_ms: 2, term: 5, kind: 'election_started' });
    const state = run([
      { type: 'raft-event', event: a },
      { type: 'raft-event', event: b },
    ]);
    expect(state.raftEvents).toEqual([a, b]);
  });

  it(`raft events are capped at ${MAX_RAFT_EVENTS}, dropping the oldest`, () => {
    const actions: ClusterLiveAction[] = Array.from({ length: MAX_RAFT_EVENTS + 5 }, (_, i) => ({
      type: 'raft-event',
      event: raftEvent({ at_ms: i, term: i }),
    }));
    const state = run(actions);
    expect(state.raftEvents).toHaveLength(MAX_RAFT_EVENTS);
    expect(state.raftEvents[0]?.at_ms).toBe(5);
    expect(state.raftEvents.at(-1)?.at_ms).toBe(MAX_RAFT_EVENTS + 4);
  });

  it('a repeated raft event after a reconnect is kept once', () => {
    const event = raftEvent();
    const state = run([
      { type: 'raft-event', event },
      { type: 'raft-event', event: { ...event } },
    ]);
    expect(state.raftEvents).toHaveLength(1);
  });

  it('stream loss marks reconnecting but keeps the last status on screen', () => {
    const status = clusterStatus(1);
    const state = run([
      { type: 'stream-status', status, receivedAtMs: 1 },
      { type: 'stream-lost', reason: 'stream closed' },
    ]);
    expect(state.stream).toBe('reconnecting');
    expect(state.streamError).toBe('stream closed');
    expect(state.status).toBe(status);
  });

  it('the next status event clears reconnecting', () => {
    const state = run([
      { type: 'stream-lost', reason: 'stream closed' },
      { type: 'stream-status', status: clusterStatus(2), receivedAtMs: 5 },
    ]);
    expect(state.stream).toBe('live');
    expect(state.streamError).toBeNull();
  });

  it('a fallback snapshot updates the table but does not claim the stream is live', () => {
    const snapshot = clusterStatus(3, 6);
    const state = run([
      { type: 'stream-lost', reason: 'stream closed' },
      { type: 'snapshot', status: snapshot, receivedAtMs: 9 },
    ]);
    expect(state.status).toBe(snapshot);
    expect(state.statusSource).toBe('snapshot');
    expect(state.stream).toBe('reconnecting');
  });

  it('a snapshot that lands after the stream recovered is ignored as older', () => {
    const fresh = clusterStatus(2, 7);
    const state = run([
      { type: 'stream-lost', reason: 'stream closed' },
      { type: 'stream-status', status: fresh, receivedAtMs: 10 },
      { type: 'snapshot', status: clusterStatus(1, 6), receivedAtMs: 11 },
    ]);
    expect(state.status).toBe(fresh);
    expect(state.statusSource).toBe('stream');
  });

  it('malformed frames are counted and change nothing else', () => {
    const before = run([{ type: 'stream-status', status: clusterStatus(1), receivedAtMs: 1 }]);
    const after = clusterLiveReducer(before, { type: 'malformed-frame' });
    expect(after.malformedFrames).toBe(1);
    expect(after.status).toBe(before.status);
    expect(after.stream).toBe('live');
  });
});
