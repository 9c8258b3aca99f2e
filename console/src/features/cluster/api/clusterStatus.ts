import { queryOptions } from '@tanstack/react-query';
import { getJson } from '../../../api/http';
import type { ClusterStatus } from '../../../api/types';
import { parseClusterStatus } from './payloads';

/** GET /v1/cluster/status, validated. Used as the fallback while the event stream is down. */
export async function fetchClusterStatus(signal?: AbortSignal): Promise<ClusterStatus> {
  const body = await getJson('/v1/cluster/status', signal);
  const status = parseClusterStatus(body);
  if (!status) throw new Error('malformed cluster status from /v1/cluster/status');
  return status;
}

export const clusterStatusQuery = queryOptions({
  queryKey: ['cluster', 'status'] as const,
  queryFn: ({ signal }) => fetchClusterStatus(signal),
  // The event stream is the live source; a snapshot older than a second is stale.
  staleTime: 0,
  retry: false,
});
