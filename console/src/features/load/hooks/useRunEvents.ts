import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { followEventStream } from '../../../lib/followEventStream';
import { parseRunEventData, RUN_EVENT, RUN_EVENTS_URL, runQuery } from '../api/runner';

/** The runner sends the run's state at least every 5 s; this much silence means a dead stream. */
const DEFAULT_SILENCE_LIMIT_MS = 15_000;

export interface RunEventsOptions {
  /** Delays before successive reconnect attempts; the last one repeats. */
  reconnectDelaysMs?: readonly number[];
  silenceLimitMs?: number;
}

export interface RunEventsState {
  /** `live` once a `run` event arrived on the open stream. */
  stream: 'connecting' | 'live' | 'reconnecting';
  /** Why the stream was last lost, while it is; null while it flows. */
  lost: string | null;
}

/**
 * Follows the load runner's state over GET /load/run/events while `enabled` (the
 * runner answered, so there is one to follow): each `run` event replaces the run query's
 * data, so a start, a stop and the end of a run show as they happen, from this tab or
 * any other. A lost stream is opened again after a short backoff (followEventStream),
 * and GET /load/run is read once meanwhile so the view does not freeze.
 */
export function useRunEvents(enabled: boolean, options: RunEventsOptions = {}): RunEventsState {
  const { reconnectDelaysMs, silenceLimitMs = DEFAULT_SILENCE_LIMIT_MS } = options;
  const client = useQueryClient();
  const [state, setState] = useState<RunEventsState>({ stream: 'connecting', lost: null });

  useEffect(() => {
    if (!enabled) return undefined;
    return followEventStream({
      url: RUN_EVENTS_URL,
      reconnectDelaysMs,
      silenceLimitMs,
      signOfLife: 'run state',
      events: {
        [RUN_EVENT]: (data) => {
          const view = parseRunEventData(data);
          if (!view) return false;
          client.setQueryData(runQuery.queryKey, view);
          setState({ stream: 'live', lost: null });
          return true;
        },
      },
      onLost: (reason) => {
        setState({ stream: 'reconnecting', lost: reason });
        void client.invalidateQueries({ queryKey: runQuery.queryKey });
      },
    });
  }, [enabled, client, reconnectDelaysMs, silenceLimitMs]);

  return state;
}
