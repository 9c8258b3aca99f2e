// The load runner beside a local cluster (`strata-cluster load-runner`, routed under
// /load/ by the gateway). It is not a node endpoint, so it is not in the nodes' OpenAPI
// document: its answers are described here and checked when read.
import { queryOptions } from '@tanstack/react-query';
import { sendJson } from '../../../api/send';

export interface ScenarioInfo {
  name: string;
  description: string;
}

export interface Scenarios {
  scenarios: ScenarioInfo[];
  max_rate_per_s: number;
  max_duration_s: number;
  target: string;
}

export type RunState = 'idle' | 'running' | 'stopping' | 'finished' | 'stopped' | 'failed';

export interface RunPlan {
  scenario: string;
  rate_per_s: number;
  duration_s: number;
}

export interface RunView {
  state: RunState;
  plan?: RunPlan;
  started_at_ms: number;
  ended_at_ms?: number;
  exit_code?: number;
  output: string[];
}

const STATES: readonly RunState[] = ['idle', 'running', 'stopping', 'finished', 'stopped', 'failed'];

function parseRun(value: unknown): RunView {
  const v = value as Partial<RunView> | null;
  if (!v || !STATES.includes(v.state ?? ('' as RunState)) || typeof v.started_at_ms !== 'number') {
    throw new Error('malformed answer from /load/run');
  }
  return { ...v, output: Array.isArray(v.output) ? v.output : [] } as RunView;
}

export function isActive(run: RunView | undefined): boolean {
  return run?.state === 'running' || run?.state === 'stopping';
}

export const scenariosQuery = queryOptions({
  queryKey: ['load', 'scenarios'] as const,
  queryFn: ({ signal }) => sendJson<Scenarios>('GET', '/load/scenarios', undefined, signal),
  staleTime: Infinity,
  retry: false,
});

/**
 * GET /load/run. Read once, then once a second only while a run is in progress, to
 * follow its progress and see it end; an idle runner is not asked again.
 */
export const runQuery = queryOptions({
  queryKey: ['load', 'run'] as const,
  queryFn: async ({ signal }) => parseRun(await sendJson<unknown>('GET', '/load/run', undefined, signal)),
  refetchInterval: (query) => (isActive(query.state.data) ? 1000 : false),
  retry: false,
});

export async function startRun(plan: RunPlan): Promise<RunView> {
  return parseRun(await sendJson<unknown>('POST', '/load/run', plan));
}

export async function stopRun(): Promise<RunView> {
  return parseRun(await sendJson<unknown>('DELETE', '/load/run'));
}
