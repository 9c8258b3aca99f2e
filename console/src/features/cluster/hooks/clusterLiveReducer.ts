import type { ClusterStats, ClusterStatus, RaftEvent, RangeEvent } from '../../../api/types';

/** How many raft events the view keeps; older ones fall off the end. */
export const MAX_RAFT_EVENTS = 20;
/** How many range events (splits, new range leaders) the view keeps. */
export const MAX_RANGE_EVENTS = 20;

/**
 * - `connecting`: first connection, nothing received yet.
 * - `live`: the stream has delivered a status since it (re)connected.
 * - `reconnecting`: the stream failed or went silent; what is shown may be old.
 */
export type StreamState = 'connecting' | 'live' | 'reconnecting';

export interface ClusterLiveState {
  /** The latest full status; replaced wholesale, never merged. */
  status: ClusterStatus | null;
  /** Where `status` came from: the event stream, or a fallback GET while it was down. */
  statusSource: 'stream' | 'snapshot' | null;
  /** Client clock (ms) when `status` arrived. */
  statusReceivedAtMs: number | null;
  /** Raft events in arrival order, oldest first, at most MAX_RAFT_EVENTS. */
  raftEvents: RaftEvent[];
  /** Range events (splits, new range leaders) in arrival order, oldest first. */
  rangeEvents: RangeEvent[];
  stream: StreamState;
  /** Why the stream was last lost; cleared when it is live again. */
  streamError: string | null;
  /** Frames whose data did not match the contract (dropped, counted for display). */
  malformedFrames: number;
  /** Every member's numbers from the latest `stats` frame (about one a second). */
  stats: ClusterStats | null;
}

export type ClusterLiveAction =
  | { type: 'stream-status'; status: ClusterStatus; receivedAtMs: number }
  | { type: 'raft-event'; event: RaftEvent }
  | { type: 'range-event'; event: RangeEvent }
  | { type: 'stream-lost'; reason: string }
  | { type: 'snapshot'; status: ClusterStatus; receivedAtMs: number }
  | { type: 'stats'; stats: ClusterStats }
  | { type: 'malformed-frame' };

export const initialClusterLiveState: ClusterLiveState = {
  status: null,
  statusSource: null,
  statusReceivedAtMs: null,
  raftEvents: [],
  rangeEvents: [],
  stream: 'connecting',
  streamError: null,
  malformedFrames: 0,
  stats: null,
};

function sameEvent(a: RaftEvent, b: RaftEvent): boolean {
  return (
    a.kind === b.kind &&
    a.node_id === b.node_id &&
    a.term === b.term &&
    a.leader_id === b.leader_id &&
    a.role === b.role &&
    a.at_ms === b.at_ms
  );
}

function sameRangeEvent(a: RangeEvent, b: RangeEvent): boolean {
  return (
    a.kind === b.kind &&
    a.range === b.range &&
    a.node_id === b.node_id &&
    a.leader_id === b.leader_id &&
    a.term === b.term &&
    a.at_ms === b.at_ms
  );
}

export function clusterLiveReducer(state: ClusterLiveState, action: ClusterLiveAction): ClusterLiveState {
  switch (action.type) {
    case 'stream-status':
      // A status frame is the whole truth at that moment, and proof the stream works.
      return {
        ...state,
        status: action.status,
        statusSource: 'stream',
        statusReceivedAtMs: action.receivedAtMs,
        stream: 'live',
        streamError: null,
      };
    case 'raft-event': {
      // A reconnect to another node may repeat an event the view already has.
      if (state.raftEvents.some((known) => sameEvent(known, action.event))) return state;
      const raftEvents = [...state.raftEvents, action.event].slice(-MAX_RAFT_EVENTS);
      return { ...state, raftEvents };
    }
    case 'range-event': {
      if (state.rangeEvents.some((known) => sameRangeEvent(known, action.event))) return state;
      const rangeEvents = [...state.rangeEvents, action.event].slice(-MAX_RANGE_EVENTS);
      return { ...state, rangeEvents };
    }
    case 'stream-lost':
      return { ...state, stream: 'reconnecting', streamError: action.reason };
    case 'snapshot':
      // A fallback GET can finish after the stream has already recovered; the
      // stream's frame is newer then, so the snapshot must not overwrite it.
      if (state.stream === 'live') return state;
      return {
        ...state,
        status: action.status,
        statusSource: 'snapshot',
        statusReceivedAtMs: action.receivedAtMs,
      };
    case 'stats':
      return { ...state, stats: action.stats };
    case 'malformed-frame':
      return { ...state, malformedFrames: state.malformedFrames + 1 };
  }
}
