import { useEffect, useReducer, useState } from 'react';
import { followEventStream } from '../../../lib/followEventStream';
import { initialK6Series, K6_EVENTS, K6_EVENTS_URL, k6Reducer, type K6Figures, type K6Point } from '../api/k6';

/** k6 sends a snapshot every second; this much silence means a dead stream. */
const SILENCE_LIMIT_MS = 5000;

export interface K6View {
  latest: K6Figures | null;
  history: K6Point[];
  /** Why k6's stream was last lost while the run lasts; null while it flows. */
  lost: string | null;
}

/**
 * k6's figures, pushed by k6 once a second over its event stream while `active`; the
 * last ones stay on view once the run has ended.
 */
export function useK6Figures(active: boolean): K6View {
  const [series, dispatch] = useReducer(k6Reducer, initialK6Series);
  const [lost, setLost] = useState<string | null>(null);

  useEffect(() => {
    if (!active) return undefined;
    // k6 replays its stream from the run's start to each new connection: the figures
    // start over with the first event a connection brings, not when it opens, so that
    // the last figures stay on view when k6 ends its run and its stream with it.
    let fresh = true;
    const events = Object.fromEntries(
      K6_EVENTS.map((name) => [
        name,
        (data: string) => {
          if (fresh) {
            fresh = false;
            dispatch({ type: 'opened' });
          }
          dispatch({ type: 'event', name, data });
          setLost(null);
          return name === 'snapshot';
        },
      ]),
    );
    return followEventStream({
      url: K6_EVENTS_URL,
      silenceLimitMs: SILENCE_LIMIT_MS,
      signOfLife: 'snapshot',
      events,
      onOpen: () => {
        fresh = true;
      },
      onLost: setLost,
    });
  }, [active]);

  return { latest: series.latest, history: series.history, lost: active ? lost : null };
}
