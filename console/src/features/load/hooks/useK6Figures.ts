import { useQuery, useQueryClient } from '@tanstack/react-query';
import { k6MetricsQuery, type K6Figures, type K6Point } from '../api/k6';

export interface K6View {
  latest: K6Figures | null;
  /** Requests per second between the two latest readings. */
  requestsPerS: number | null;
  history: K6Point[];
  error: unknown;
}

/** k6's figures while `active`, its request counter turned into a rate between readings. */
export function useK6Figures(active: boolean): K6View {
  const client = useQueryClient();
  const metrics = useQuery(k6MetricsQuery(client, active));
  const history = metrics.data?.history ?? [];
  return {
    latest: metrics.data?.latest ?? null,
    requestsPerS: history.at(-1)?.requestsPerS ?? null,
    history,
    error: metrics.error,
  };
}
