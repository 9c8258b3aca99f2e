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

/** The runner's state as server-sent events: `run` events, each the whole view (as GET /load/run
 * answers), at once, at every change and at least every 5 s. */
export const RUN_EVENTS_URL = '/load/run/events';
export const RUN_EVENT = 'run';

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

/** The data of a `run` event, checked as GET /load/run's answer is; null when malformed. */
export function parseRunEventData(data: string): RunView | null {
  try {
    return parseRun(JSON.parse(data));
  } catch {
    return null;
  }
}

/**
 * GET /load/run, read once; after that the runner pushes every change over
 * RUN_EVENTS_URL (hooks/useRunEvents.ts), which writes it into this query. It is read
 * again only when that stream is lost, so the view does not freeze meanwhile.
 */
export const runQuery = queryOptions({
  queryKey: ['load', 'run'] as const,
  queryFn: async ({ signal }) => parseRun(await sendJson<unknown>('GET', '/load/run', undefined, signal)),
  staleTime: Infinity,
  retry: false,
});

export async function startRun(plan: RunPlan): Promise<RunView> {
  return parseRun(await sendJson<unknown>('POST', '/load/run', plan));
}

export async function stopRun(): Promise<RunView> {
  return parseRun(await sendJson<unknown>('DELETE', '/load/run'));
}
