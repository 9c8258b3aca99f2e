import { useQuery } from '@tanstack/react-query';
import { useEffect, useReducer } from 'react';
import { getJson } from '../../../api/http';
import type { LiveState } from '../../../components/LiveIndicator';
import { followEventStream } from '../../../lib/followEventStream';
import { nodeRate, type NodeRate } from '../api/rates';
import type { ClusterStats, MemberStats } from '../api/types';

const EVENTS_URL = '/v1/cluster/events';
/** Points kept for the chart: about two minutes of one-second samples. */
export const HISTORY_POINTS = 120;
/** The nodes send `stats` about every second; this much silence means a dead stream. */
const SILENCE_LIMIT_MS = 5000;

export interface RatePoint {
  atMs: number;
  /** Client operations per second, by node id. */
  opsByNode: Record<number, number>;
}

export interface NodeRatesState {
  stream: LiveState;
  /** Each node's latest sample, by id. */
  samples: Record<number, MemberStats>;
  /** Each node's latest rates, by id. */
  rates: Record<number, NodeRate>;
  history: RatePoint[];
  /** Members that could not be asked, with why. */
  unreachable: Record<number, string>;
}

type Action = { type: 'stats'; stats: ClusterStats } | { type: 'stream'; stream: LiveState };

export const initialNodeRates: NodeRatesState = { stream: 'connecting', samples: {}, rates: {}, history: [], unreachable: {} };

/** Folds one stats payload into the state: each node's rate since its previous sample. */
export function nodeRatesReducer(state: NodeRatesState, action: Action): NodeRatesState {
  if (action.type === 'stream') return { ...state, stream: action.stream };
  const samples = { ...state.samples };
  const rates = { ...state.rates };
  const unreachable: Record<number, string> = {};
  const opsByNode: Record<number, number> = {};
  let atMs = 0;
  for (const member of action.stats.nodes) {
    if (!member.stats) {
      unreachable[member.id] = member.error ?? 'no stats';
      continue;
    }
    const previous = samples[member.id];
    if (previous && member.at_ms <= previous.at_ms) continue;
    samples[member.id] = member;
    const rate = previous ? nodeRate(previous, member) : null;
    if (rate) {
      rates[member.id] = rate;
      opsByNode[member.id] = rate.opsPerS;
      atMs = Math.max(atMs, rate.atMs);
    }
  }
  const history =
    atMs > 0 ? [...state.history, { atMs, opsByNode }].slice(-HISTORY_POINTS) : state.history;
  return { ...state, samples, rates, history, unreachable };
}

function isStats(value: unknown): value is ClusterStats {
  const v = value as Partial<ClusterStats> | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.nodes) && typeof v.answered_by === 'number';
}

/**
 * Every node's throughput, latency and errors, from the stats the nodes push over the
 * event stream about once a second (the first sample comes from GET /v1/cluster/stats).
 */
export function useNodeRates(): NodeRatesState {
  const [state, dispatch] = useReducer(nodeRatesReducer, initialNodeRates);
  const first = useQuery({
    queryKey: ['load', 'stats'],
    queryFn: ({ signal }) => getJson('/v1/cluster/stats', signal),
    retry: false,
    refetchOnWindowFocus: false,
    staleTime: Infinity,
  });

  useEffect(() => {
    if (first.data) dispatch({ type: 'stats', stats: first.data });
  }, [first.data]);

  useEffect(
    () =>
      followEventStream({
        url: EVENTS_URL,
        silenceLimitMs: SILENCE_LIMIT_MS,
        signOfLife: 'stats',
        events: {
          stats: (data) => {
            let value: unknown = null;
            try {
              value = JSON.parse(data);
            } catch {
              return false;
            }
            if (!isStats(value)) return false;
            dispatch({ type: 'stream', stream: 'live' });
            dispatch({ type: 'stats', stats: value });
            return true;
          },
        },
        onLost: () => {
          dispatch({ type: 'stream', stream: 'reconnecting' });
        },
      }),
    [],
  );

  return state;
}
