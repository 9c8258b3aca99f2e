import { render, screen } from '@testing-library/react';
import type { RangeEvent } from '../../../api/types';
import { parseRangeEventData } from '../api/payloads';
import { clusterLiveReducer, initialClusterLiveState } from '../hooks/clusterLiveReducer';
import { RangeActivity } from './RangeActivity';

// Frames as a node sends them (`event: range`; the shape harness/tests/balance.rs reads).
const SPLIT =
  '{"kind":"split","range":4,"node_id":2,"leader_id":0,"term":0,"parent":1,"start":"f","end":"h","encoding":"utf8","at_ms":1764358000000}';
const LAST_SPLIT =
  '{"kind":"split","range":6,"node_id":2,"leader_id":0,"term":0,"parent":1,"start":"j","end":"","encoding":"utf8","at_ms":1764358000100}';
const MOVED =
  '{"kind":"leader_changed","range":4,"node_id":3,"leader_id":3,"term":5,"parent":0,"start":"","end":"","encoding":"utf8","at_ms":1764358002000}';

function parsed(data: string): RangeEvent {
  const event = parseRangeEventData(data);
  if (!event) throw new Error(`not a range event: ${data}`);
  return event;
}

describe('RangeActivity', () => {
  it('tells a split and a new range leader, newest first', () => {
    render(<RangeActivity events={[parsed(SPLIT), parsed(LAST_SPLIT), parsed(MOVED)]} />);
    const items = screen.getAllByTestId('range-event');
    expect(items.map((i) => i.getAttribute('data-kind'))).toEqual(['leader_changed', 'split', 'split']);
    expect(screen.getByText('Node 3 leads range 4')).toBeInTheDocument();
    expect(screen.getByText('Range 4 split off range 1: serves f → h')).toBeInTheDocument();
    expect(screen.getByText('Range 6 split off range 1: serves j → last key')).toBeInTheDocument();
  });

  it('says when nothing happened yet', () => {
    render(<RangeActivity events={[]} />);
    expect(screen.getByText('No splits or range leader changes seen since the page opened.')).toBeInTheDocument();
  });

  it('refuses a frame outside the contract', () => {
    expect(parseRangeEventData(SPLIT.replace('"split"', '"merged"'))).toBeNull();
    expect(parseRangeEventData(MOVED.replace('"range":4', '"range":-4'))).toBeNull();
    expect(parseRangeEventData('{"kind":"split"')).toBeNull();
  });

  it('keeps one of an event a reconnect repeats', () => {
    let state = initialClusterLiveState;
    for (const data of [SPLIT, MOVED, SPLIT]) {
      state = clusterLiveReducer(state, { type: 'range-event', event: parsed(data) });
    }
    expect(state.rangeEvents.map((e) => e.kind)).toEqual(['split', 'leader_changed']);
  });
});
