import { useEffect, useReducer } from 'react';
import { followEventStream } from './followEventStream';
import {
  EVENTS_URL,
  initialStatsStreamState,
  parseRaftData,
  parseStatsData,
  parseStatusData,
  statsStreamReducer,
  type StatsStreamState,
} from './statsStream';

export interface StatsStreamOptions {
  url?: string;
  /** Delays before successive reconnect attempts; the last one repeats. */
  reconnectDelaysMs?: readonly number[];
  /** A status arrives at least every second; this much silence means a dead stream. */
  silenceLimitMs?: number;
}

// The history outlives a view: switching from one section to another keeps what the
// stream delivered so far (the statuses before an incident, the samples behind a rate),
// and the new view's stream appends to it.
let retained: StatsStreamState = initialStatsStreamState;

/** Forgets the retained history (tests start from nothing). */
export function forgetStatsHistory(): void {
  retained = initialStatsStreamState;
}
const DEFAULT_SILENCE_LIMIT_MS = 5000;

/**
 * Follows GET /v1/cluster/events (its `stats`, `status` and `raft` frames) into a
 * bounded history. Nothing polls: the nodes push a `stats` frame about every second,
 * and views turn its counters into rates. A lost or silent stream is opened again
 * after a short backoff (`followEventStream`).
 */
export function useStatsStream(options: StatsStreamOptions = {}): StatsStreamState {
  const {
    url = EVENTS_URL,
    reconnectDelaysMs,
    silenceLimitMs = DEFAULT_SILENCE_LIMIT_MS,
  } = options;
  const [state, dispatch] = useReducer(statsStreamReducer, retained, (kept) => ({
    ...kept,
    stream: 'connecting' as const,
    streamError: null,
  }));
  useEffect(() => {
    retained = state;
  }, [state]);

  useEffect(
    () =>
      followEventStream({
        url,
        reconnectDelaysMs,
        silenceLimitMs,
        signOfLife: 'status',
        events: {
          stats: (data) => {
            const stats = parseStatsData(data);
            dispatch(stats ? { type: 'stats', stats, receivedAtMs: Date.now() } : { type: 'malformed' });
          },
          status: (data) => {
            const status = parseStatusData(data);
            if (!status) {
              dispatch({ type: 'malformed' });
              return false;
            }
            dispatch({ type: 'status', status, receivedAtMs: Date.now() });
            return true;
          },
          raft: (data) => {
            const raft = parseRaftData(data);
            dispatch(raft ? { type: 'raft', event: raft } : { type: 'malformed' });
          },
        },
        onLost: (reason) => {
          dispatch({ type: 'lost', reason });
        },
      }),
    [url, reconnectDelaysMs, silenceLimitMs],
  );

  return state;
}
