import type { ClusterStats, ClusterStatus, RaftEvent } from '../api/types';

// The pure half of the live stream: what arrives over GET /v1/cluster/events, checked
// against the contract's outline, folded into a bounded history. `useStatsStream` is
// the EventSource half.

/** The stream, relative: the console and the API share one origin. */
export const EVENTS_URL = '/v1/cluster/events';

/** About one `stats` frame a second: five minutes of history for rates and charts. */
export const MAX_SAMPLES = 300;
/** Status frames kept (one on every change and at least every second). */
export const MAX_STATUSES = 600;
/** Raft events kept as they arrive. */
export const MAX_RAFT_EVENTS = 200;

export type StreamState = 'connecting' | 'live' | 'reconnecting';

/** A `stats` frame and when the browser received it. */
export interface StatsSample {
  receivedAtMs: number;
  stats: ClusterStats;
}

/** A `status` frame and when the browser received it. */
export interface StatusSample {
  receivedAtMs: number;
  status: ClusterStatus;
}

export interface StatsStreamState {
  stream: StreamState;
  /** Why the stream was last lost; cleared once it is live again. */
  streamError: string | null;
  /** Oldest first, at most MAX_SAMPLES. */
  samples: StatsSample[];
  /** Oldest first, at most MAX_STATUSES. */
  statuses: StatusSample[];
  /** As they arrived, oldest first, at most MAX_RAFT_EVENTS. */
  raftEvents: RaftEvent[];
  malformedFrames: number;
}

export const initialStatsStreamState: StatsStreamState = {
  stream: 'connecting',
  streamError: null,
  samples: [],
  statuses: [],
  raftEvents: [],
  malformedFrames: 0,
};

export type StatsStreamAction =
  | { type: 'stats'; stats: ClusterStats; receivedAtMs: number }
  | { type: 'status'; status: ClusterStatus; receivedAtMs: number }
  | { type: 'raft'; event: RaftEvent }
  | { type: 'lost'; reason: string }
  | { type: 'malformed' };

function keepLast<T>(items: T[], item: T, max: number): T[] {
  const next = items.length >= max ? items.slice(items.length - max + 1) : items.slice();
  next.push(item);
  return next;
}

export function statsStreamReducer(state: StatsStreamState, action: StatsStreamAction): StatsStreamState {
  switch (action.type) {
    case 'stats':
      return {
        ...state,
        stream: 'live',
        streamError: null,
        samples: keepLast(state.samples, { receivedAtMs: action.receivedAtMs, stats: action.stats }, MAX_SAMPLES),
      };
    case 'status':
      return {
        ...state,
        stream: 'live',
        streamError: null,
        statuses: keepLast(state.statuses, { receivedAtMs: action.receivedAtMs, status: action.status }, MAX_STATUSES),
      };
    case 'raft': {
      const e = action.event;
      const seen = state.raftEvents.some(
        (r) => r.node_id === e.node_id && r.at_ms === e.at_ms && r.kind === e.kind && r.term === e.term,
      );
      return seen ? state : { ...state, raftEvents: keepLast(state.raftEvents, e, MAX_RAFT_EVENTS) };
    }
    case 'lost':
      return { ...state, stream: 'reconnecting', streamError: action.reason };
    case 'malformed':
      return { ...state, malformedFrames: state.malformedFrames + 1 };
  }
}

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The `data:` of a `stats` frame, or null when its outline does not match the contract:
 * every member has an id, an address and a time, and either numbers with the parts the
 * views read (raft, engine, process, canary, the activity lists) or an error.
 */
export function parseStatsData(data: string): ClusterStats | null {
  const value = parseJson(data);
  if (!isObject(value) || !isCount(value.answered_by) || !Array.isArray(value.nodes)) return null;
  for (const node of value.nodes as unknown[]) {
    if (!isObject(node) || !isCount(node.id) || typeof node.address !== 'string' || !isCount(node.at_ms)) {
      return null;
    }
    const stats = node.stats;
    if (stats === null || stats === undefined) continue;
    if (
      !isObject(stats) ||
      !isObject(stats.raft) ||
      !isObject(stats.engine) ||
      !isObject(stats.process) ||
      !isObject(stats.canary) ||
      !Array.isArray(stats.engine_activity) ||
      !Array.isArray(stats.raft_activity)
    ) {
      return null;
    }
  }
  return value as unknown as ClusterStats;
}

/** The `data:` of a `status` frame, or null when malformed. */
export function parseStatusData(data: string): ClusterStatus | null {
  const value = parseJson(data);
  if (!isObject(value) || !isCount(value.leader_id) || !isCount(value.term) || !Array.isArray(value.nodes)) {
    return null;
  }
  const ok = (value.nodes as unknown[]).every(
    (n) => isObject(n) && isCount(n.id) && typeof n.role === 'string' && typeof n.healthy === 'boolean',
  );
  return ok ? (value as unknown as ClusterStatus) : null;
}

/** The `data:` of a `raft` frame, or null when malformed. */
export function parseRaftData(data: string): RaftEvent | null {
  const value = parseJson(data);
  if (
    !isObject(value) ||
    typeof value.kind !== 'string' ||
    !isCount(value.node_id) ||
    !isCount(value.term) ||
    !isCount(value.leader_id) ||
    !isCount(value.at_ms) ||
    !isCount(value.duration_ms)
  ) {
    return null;
  }
  return value as unknown as RaftEvent;
}
