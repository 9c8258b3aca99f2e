import { clusterStatus, raftEvent } from '../../../test/fixtures';
import { parseClusterStatus, parseRaftEventData, parseStatusEventData } from './payloads';

describe('parseStatusEventData', () => {
  it('accepts a status frame from the contract and keeps every node field', () => {
    // Proves a well-formed `event: status` payload reaches state unchanged, error text included.
    const status = clusterStatus(2, 5, {
      3: { healthy: false, role: 'unknown', error: 'connect: connection refused' },
    });
    expect(parseStatusEventData(JSON.stringify(status))).toEqual(status);
  });

  it('keeps whether a node is proven, and takes a node that does not say as voting', () => {
    const status = clusterStatus(1, 3, { 2: { proven: false } });
    expect(parseClusterStatus(status)?.nodes.map((n) => n.proven)).toEqual([true, false, true]);
    const first = status.nodes[0];
    if (!first) throw new Error('the fixture has nodes');
    const { proven: _, ...older } = first;
    expect(parseClusterStatus({ ...status, nodes: [older] })?.nodes[0]?.proven).toBe(true);
    expect(parseClusterStatus({ ...status, nodes: [{ ...older, proven: 'no' }] })).toBeNull();
  });

  it('rejects text that is not JSON instead of throwing', () => {
    expect(parseStatusEventData('{"leader_id": 1, "term"')).toBeNull();
  });

  it('rejects a status without nodes', () => {
    expect(parseStatusEventData(JSON.stringify({ leader_id: 1, term: 2 }))).toBeNull();
  });

  it('rejects a node with a role outside the contract', () => {
    const status = clusterStatus(1);
    const bad = { ...status, nodes: [{ ...status.nodes[0], role: 'boss' }] };
    expect(parseClusterStatus(bad)).toBeNull();
  });

  it('rejects negative or fractional indexes', () => {
    const status = clusterStatus(1);
    expect(parseClusterStatus({ ...status, nodes: [{ ...status.nodes[0], commit_index: -1 }] })).toBeNull();
    expect(parseClusterStatus({ ...status, term: 1.5 })).toBeNull();
  });

  it('drops an empty error string so the table shows no blank error line', () => {
    const status = clusterStatus(1, 3, { 2: { error: '' } });
    expect(parseClusterStatus(status)?.nodes[1]).not.toHaveProperty('error');
  });
});

describe('parseRaftEventData', () => {
  it('accepts a raft frame from the contract', () => {
    const event = raftEvent({ kind: 'role_changed', role: 'candidate' });
    expect(parseRaftEventData(JSON.stringify(event))).toEqual(event);
  });

  it('accepts a snapshot a follower received, apart from the one it installs', () => {
    // Proves the kind the nodes added for a received snapshot reaches the event list.
    for (const kind of ['snapshot_received', 'snapshot_installed'] as const) {
      const event = raftEvent({ kind, node_id: 3, detail: 'index 1200 term 2 from node 1' });
      expect(parseRaftEventData(JSON.stringify(event))).toEqual(event);
    }
  });

  it('rejects an unknown event kind', () => {
    expect(parseRaftEventData(JSON.stringify({ ...raftEvent(), kind: 'term_changed' }))).toBeNull();
  });

  it('accepts an election result with its duration and detail', () => {
    const event = raftEvent({ kind: 'leader_changed', leader_id: 3, duration_ms: 182, detail: '' });
    expect(parseRaftEventData(JSON.stringify(event))).toEqual(event);
  });

  it('rejects an event without a duration or detail', () => {
    const { duration_ms: _d, ...withoutDuration } = raftEvent();
    expect(parseRaftEventData(JSON.stringify(withoutDuration))).toBeNull();
    const { detail: _t, ...withoutDetail } = raftEvent();
    expect(parseRaftEventData(JSON.stringify(withoutDetail))).toBeNull();
  });

  it('rejects an event without a timestamp', () => {
    const { at_ms: _dropped, ...withoutTime } = raftEvent();
    expect(parseRaftEventData(JSON.stringify(withoutTime))).toBeNull();
  });
});
