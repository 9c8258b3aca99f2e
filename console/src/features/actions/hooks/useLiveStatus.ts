import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import type { LiveState } from '../../../components/LiveIndicator';
import { membersQuery } from '../api/members';
import type { ClusterStatus, RaftEvent } from '../api/types';

const EVENTS_URL = '/v1/cluster/events';
/** After the browser gives up on a stream (closed), open a new one this much later. */
const REOPEN_DELAY_MS = 1000;

function isStatus(value: unknown): value is ClusterStatus {
  const v = value as Partial<ClusterStatus> | null;
  return typeof v === 'object' && v !== null && typeof v.leader_id === 'number' && Array.isArray(v.nodes);
}

function parse(data: unknown): unknown {
  try {
    return JSON.parse(String(data));
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

  useEffect(() => {
    let source: EventSource | null = null;
    let reopen: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;

    const open = () => {
      const es = new EventSource(EVENTS_URL);
      source = es;
      es.addEventListener('status', (event) => {
        const value = parse((event).data);
        if (!isStatus(value)) return;
        setStatus(value);
        setStream('live');
      });
      es.addEventListener('raft', (event) => {
        const value = parse((event).data) as Partial<RaftEvent> | null;
        if (value?.kind === 'membership_changed') {
          void client.invalidateQueries({ queryKey: membersQuery.queryKey });
        }
      });
      es.addEventListener('error', () => {
        setStream('reconnecting');
        if (es.readyState === EventSource.CLOSED && !stopped) {
          es.close();
          reopen = setTimeout(open, REOPEN_DELAY_MS);
        }
      });
    };
    open();
    return () => {
      stopped = true;
      clearTimeout(reopen);
      source?.close();
    };
  }, [client]);

  return { status, stream };
}
