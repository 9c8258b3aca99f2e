import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useReducer } from 'react';
import { followEventStream } from '../../../lib/followEventStream';
import { parseStatsData } from '../../../lib/statsStream';
import { CLUSTER_EVENTS_URL, RAFT_EVENT, RANGE_EVENT, STATS_EVENT, STATUS_EVENT } from '../api/clusterEvents';
import { clusterStatusQuery } from '../api/clusterStatus';
import { parseRaftEventData, parseRangeEventData, parseStatusEventData } from '../api/payloads';
import { clusterLiveReducer, initialClusterLiveState, type ClusterLiveState } from './clusterLiveReducer';

export interface ClusterEventsOptions {
  url?: string;
  /** Delays before successive reconnect attempts; the last one repeats. */
  reconnectDelaysMs?: readonly number[];
  /** The server sends a status at least every second; this much silence means a dead stream. */
  silenceLimitMs?: number;
}

const DEFAULT_SILENCE_LIMIT_MS = 5000;

/**
 * Follows GET /v1/cluster/events and folds it into ClusterLiveState. When the stream
 * is lost (`followEventStream` opens a new one after a short backoff) it fetches
 * GET /v1/cluster/status, so the table is not frozen; the view says "reconnecting"
 * until a status frame arrives on the new stream.
 */
export function useClusterEvents(options: ClusterEventsOptions = {}): ClusterLiveState {
  const {
    url = CLUSTER_EVENTS_URL,
    reconnectDelaysMs,
    silenceLimitMs = DEFAULT_SILENCE_LIMIT_MS,
  } = options;
  const [state, dispatch] = useReducer(clusterLiveReducer, initialClusterLiveState);
  const queryClient = useQueryClient();

  useEffect(() => {
    let disposed = false;
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
    const stop = followEventStream({
      url,
      reconnectDelaysMs,
      silenceLimitMs,
      signOfLife: 'status',
      events: {
        [STATUS_EVENT]: (data) => {
          const status = parseStatusEventData(data);
          if (!status) {
            dispatch({ type: 'malformed-frame' });
            return false;
          }
          dispatch({ type: 'stream-status', status, receivedAtMs: Date.now() });
          return true;
        },
        [RAFT_EVENT]: (data) => {
          const raftEvent = parseRaftEventData(data);
          dispatch(raftEvent ? { type: 'raft-event', event: raftEvent } : { type: 'malformed-frame' });
        },
        [RANGE_EVENT]: (data) => {
          const rangeEvent = parseRangeEventData(data);
          dispatch(rangeEvent ? { type: 'range-event', event: rangeEvent } : { type: 'malformed-frame' });
        },
        [STATS_EVENT]: (data) => {
          const stats = parseStatsData(data);
          dispatch(stats ? { type: 'stats', stats } : { type: 'malformed-frame' });
        },
      },
      onLost: (reason) => {
        dispatch({ type: 'stream-lost', reason });
        fetchSnapshot();
      },
    });
    return () => {
      disposed = true;
      stop();
    };
  }, [url, reconnectDelaysMs, silenceLimitMs, queryClient]);

  return state;
}
