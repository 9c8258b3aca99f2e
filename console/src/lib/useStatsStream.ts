import { useEffect, useReducer } from 'react';
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

const DEFAULT_RECONNECT_DELAYS_MS: readonly number[] = [50, 200, 500, 1000, 2000];

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
 * and views turn its counters into rates. On an error or silence the stream is closed
 * and opened again after a short backoff (EventSource gives up for good on an error
 * answer, e.g. the gateway's 503 while no node is healthy).
 */
export function useStatsStream(options: StatsStreamOptions = {}): StatsStreamState {
  const {
    url = EVENTS_URL,
    reconnectDelaysMs = DEFAULT_RECONNECT_DELAYS_MS,
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

  useEffect(() => {
    let source: EventSource | null = null;
    let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
    let silenceTimer: ReturnType<typeof setTimeout> | undefined;
    let failedAttempts = 0;
    let disposed = false;

    const watchSilence = () => {
      clearTimeout(silenceTimer);
      silenceTimer = setTimeout(() => {
        lose(`no status for ${silenceLimitMs / 1000} s`);
      }, silenceLimitMs);
    };

    const connect = () => {
      source = new EventSource(url);
      source.addEventListener('stats', (event: MessageEvent<string>) => {
        const stats = parseStatsData(event.data);
        dispatch(stats ? { type: 'stats', stats, receivedAtMs: Date.now() } : { type: 'malformed' });
      });
      source.addEventListener('status', (event: MessageEvent<string>) => {
        const status = parseStatusData(event.data);
        if (!status) {
          dispatch({ type: 'malformed' });
          return;
        }
        failedAttempts = 0;
        watchSilence();
        dispatch({ type: 'status', status, receivedAtMs: Date.now() });
      });
      source.addEventListener('raft', (event: MessageEvent<string>) => {
        const raft = parseRaftData(event.data);
        dispatch(raft ? { type: 'raft', event: raft } : { type: 'malformed' });
      });
      source.addEventListener('error', () => {
        lose(source?.readyState === EventSource.CLOSED ? 'stream closed' : 'stream interrupted');
      });
      watchSilence();
    };

    function lose(reason: string) {
      if (disposed) return;
      source?.close();
      source = null;
      clearTimeout(silenceTimer);
      clearTimeout(reconnectTimer);
      dispatch({ type: 'lost', reason });
      const delays = reconnectDelaysMs.length > 0 ? reconnectDelaysMs : DEFAULT_RECONNECT_DELAYS_MS;
      const delay = delays[Math.min(failedAttempts, delays.length - 1)] ?? 1000;
      failedAttempts += 1;
      reconnectTimer = setTimeout(connect, delay);
    }

    connect();
    return () => {
      disposed = true;
      clearTimeout(reconnectTimer);
      clearTimeout(silenceTimer);
      source?.close();
    };
  }, [url, reconnectDelaysMs, silenceLimitMs]);

  return state;
}
