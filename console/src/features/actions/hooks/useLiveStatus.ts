import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import type { LiveState } from '../../../components/LiveIndicator';
import { followEventStream } from '../../../lib/followEventStream';
import { membersQuery } from '../api/members';
import type { ClusterStatus, RaftEvent } from '../api/types';

const EVENTS_URL = '/v1/cluster/events';
/** A status arrives at least every second; this much silence means a dead stream. */
const SILENCE_LIMIT_MS = 5000;

function isStatus(value: unknown): value is ClusterStatus {
  const v = value as Partial<ClusterStatus> | null;
  return typeof v === 'object' && v !== null && typeof v.leader_id === 'number' && Array.isArray(v.nodes);
}

function parse(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
}

export interface LiveStatus {
  status: ClusterStatus | null;
  stream: LiveState;
}

/**
 * The cluster's status, pushed over the event stream (`status` events). A `raft` event
 * reporting a membership change refreshes the member list, so the view shows a member
 * leave or join as soon as the change is applied.
 */
export function useLiveStatus(): LiveStatus {
  const client = useQueryClient();
  const [status, setStatus] = useState<ClusterStatus | null>(null);
  const [stream, setStream] = useState<LiveState>('connecting');

  useEffect(
    () =>
      followEventStream({
        url: EVENTS_URL,
        silenceLimitMs: SILENCE_LIMIT_MS,
        signOfLife: 'status',
        events: {
          status: (data) => {
            const value = parse(data);
            if (!isStatus(value)) return false;
            setStatus(value);
            setStream('live');
            return true;
          },
          raft: (data) => {
            const value = parse(data) as Partial<RaftEvent> | null;
            if (value?.kind === 'membership_changed') {
              void client.invalidateQueries({ queryKey: membersQuery.queryKey });
            }
          },
        },
        onLost: () => {
          setStream('reconnecting');
        },
      }),
    [client],
  );

  return { status, stream };
}
