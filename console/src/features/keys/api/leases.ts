// The lease API: every call is served by the leader, which alone times leases; the
// remaining TTLs it reports are by its clock at the moment it answered.
import { queryOptions } from '@tanstack/react-query';
import { sendJson } from '../../../api/send';
import { bytesFromBase64 } from './bytes';
import type { LeaseGrantRequest, LeaseList, LeaseResult, RevokeResult, TimeToLiveResult } from './types';

/** How often the list of leases is read again (expired leases drop out of it). */
export const LEASES_REFRESH_MS = 5000;

export interface LeaseDetail {
  id: number;
  ttlMs: number;
  remainingMs: number;
  /** The keys under the lease, decoded from base64. */
  keys: Uint8Array[];
}

/** GET /v1/leases: every lease with its granted and remaining TTL. */
export function listLeases(signal?: AbortSignal): Promise<LeaseList> {
  return sendJson<LeaseList>('GET', '/v1/leases', undefined, signal);
}

/** GET /v1/leases/{id}?keys=true: the lease's time to live and the keys under it. */
export async function getLease(id: number, signal?: AbortSignal): Promise<LeaseDetail> {
  const result = await sendJson<TimeToLiveResult>('GET', `/v1/leases/${id}?keys=true&encoding=base64`, undefined, signal);
  return {
    id: result.id,
    ttlMs: result.ttl_ms,
    remainingMs: result.remaining_ms,
    keys: (result.keys ?? []).map(bytesFromBase64),
  };
}

// Under ['keys', …]: every write the keys views make invalidates ['keys'], and any of
// them may change which keys a lease holds.
export function leasesQuery() {
  return queryOptions({
    queryKey: ['keys', 'leases'] as const,
    queryFn: ({ signal }) => listLeases(signal),
    refetchInterval: LEASES_REFRESH_MS,
    retry: false,
  });
}

export function leaseQuery(id: number) {
  return queryOptions({
    queryKey: ['keys', 'lease', id] as const,
    queryFn: ({ signal }) => getLease(id, signal),
    refetchInterval: LEASES_REFRESH_MS,
    retry: false,
  });
}

/**
 * POST /v1/leases with the TTL as typed (`30s`, `1500ms`, `2m`): the API parses it and
 * answers a TTL out of range with its own INVALID_ARGUMENT. `id` null: the cluster picks.
 */
export function grantLease(ttl: string, id: number | null): Promise<LeaseResult> {
  const body: LeaseGrantRequest = id === null ? { ttl } : { ttl, id };
  return sendJson<LeaseResult>('POST', '/v1/leases', body);
}

/** POST /v1/leases/{id}/keepalive: the TTL runs again from now (404 once it ended). */
export function keepLeaseAlive(id: number): Promise<LeaseResult> {
  return sendJson<LeaseResult>('POST', `/v1/leases/${id}/keepalive`);
}

/** DELETE /v1/leases/{id}: ends the lease now and deletes every key under it. */
export function revokeLease(id: number): Promise<RevokeResult> {
  return sendJson<RevokeResult>('DELETE', `/v1/leases/${id}`);
}

/**
 * What is left of a TTL the leader reported `remainingMs` at `readAtMs` (the browser's
 * clock when the answer came), at `nowMs`; never below zero.
 */
export function remainingAt(remainingMs: number, readAtMs: number, nowMs: number): number {
  return Math.max(0, remainingMs - Math.max(0, nowMs - readAtMs));
}

/** A countdown in whole seconds, rounded up so it reads 0 s only once the TTL ran out. */
export function formatCountdown(ms: number): string {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${String(s % 60).padStart(2, '0')} s`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${String(min % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}
