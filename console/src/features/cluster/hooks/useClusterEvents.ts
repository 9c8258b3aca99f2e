import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useReducer } from 'react';
import { parseStatsData } from '../../../lib/statsStream';
import { CLUSTER_EVENTS_URL, RAFT_EVENT, STATS_EVENT, STATUS_EVENT } from '../api/clusterEvents';
import { clusterStatusQuery } from '../api/clusterStatus';
import { parseRaftEventData, parseStatusEventData } from '../api/payloads';
import { clusterLiveReducer, initialClusterLiveState, type ClusterLiveState } from './clusterLiveReducer';

export interface ClusterEventsOptions {
  url?: string;
  /** Delays before successive reconnect attempts; the last one repeats. */
  reconnectDelaysMs?: readonly number[];
  /** The server sends a status at least every second; this much silence means a dead stream. */
  silenceLimitMs?: number;
}

// Capped at 2 s: one cheap request per tab every 2 s while down is fine, and a
// cluster that comes back is visible again within that.
const DEFAULT_RECONNECT_DELAYS_MS: readonly number[] = [50, 200, 500, 1000, 2000];
const DEFAULT_SILENCE_LIMIT_MS = 5000;

/**
 * Follows GET /v1/cluster/events and folds it into ClusterLiveState.
 *
 * EventSource reconnects by itself only after a network drop, and only after its own
 * retry delay (seconds). When the gateway answers with an error instead (Envoy's 503
 * while no node is healthy, during an election), EventSource closes for good. So on
 * any error this hook closes the stream and opens a new one itself, with a short
 * backoff, and meanwhile fetches GET /v1/cluster/status so the table is not frozen.
 * The view says "reconnecting" until a status frame arrives on the new stream.
 */
export function useClusterEvents(options: ClusterEventsOptions = {}): ClusterLiveState {
  const {
    url = CLUSTER_EVENTS_URL,
    reconnectDelaysMs = DEFAULT_RECONNECT_DELAYS_MS,
    silenceLimitMs = DEFAULT_SILENCE_LIMIT_MS,
  } = options;
  const [state, dispatch] = useReducer(clusterLiveReducer, initialClusterLiveState);
  const queryClient = useQueryClient();

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

    const onStatus = (event: MessageEvent<string>) => {
      const status = parseStatusEventData(event.data);
      if (!status) {
        dispatch({ type: 'malformed-frame' });
        return;
      }
      failedAttempts = 0;
      watchSilence();
      dispatch({ type: 'stream-status', status, receivedAtMs: Date.now() });
    };

    const onRaft = (event: MessageEvent<string>) => {
      const raftEvent = parseRaftEventData(event.data);
      dispatch(raftEvent ? { type: 'raft-event', event: raftEvent } : { type: 'malformed-frame' });
    };

    const onStats = (event: MessageEvent<string>) => {
      const stats = parseStatsData(event.data);
      dispatch(stats ? { type: 'stats', stats } : { type: 'malformed-frame' });
    };

    const fetchSnapshot = () => {
      queryClient
        .query(clusterStatusQuery)
        .then((status) => {
          if (!disposed) dispatch({ type: 'snapshot', status, receivedAtMs: Date.now() });
        })
        .catch(() => {
          // The gateway may have no healthy node yet; the next attempt tries again.
        });
    };

    const connect = () => {
      source = new EventSource(url);
      source.addEventListener(STATUS_EVENT, onStatus);
      source.addEventListener(RAFT_EVENT, onRaft);
      source.addEventListener(STATS_EVENT, onStats);
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
      dispatch({ type: 'stream-lost', reason });
      fetchSnapshot();
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
  }, [url, reconnectDelaysMs, silenceLimitMs, queryClient]);

  return state;
}
