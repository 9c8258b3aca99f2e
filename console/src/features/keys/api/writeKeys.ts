import { sendJson } from '../../../api/send';
import { keyPath } from './bytes';
import type { CasRequest, CasResult, DeleteResult, PutJsonRequest, WriteResult } from './types';

/** How a typed value is sent: as the text itself (UTF-8), or as base64 the API decodes. */
export type ValueEncoding = NonNullable<PutJsonRequest['encoding']>;

/**
 * Which lease a put leaves the key under: none (a put takes the key off any lease), an
 * existing lease by id (`?lease=`), or a lease of its own granted in the same write
 * with a TTL such as `30s` (`?ttl=`).
 */
export type PutLease = { kind: 'none' } | { kind: 'lease'; id: string } | { kind: 'ttl'; ttl: string };

const NO_LEASE: PutLease = { kind: 'none' };

/**
 * PUT /v1/kv/{key}. The value goes as typed, in `encoding`, and so do a lease id or TTL:
 * the API decodes and checks them, so a malformed base64 value or an unknown lease
 * comes back as the API's own INVALID_ARGUMENT or NOT_FOUND.
 */
export function putValue(
  key: Uint8Array,
  value: string,
  encoding: ValueEncoding,
  lease: PutLease = NO_LEASE,
): Promise<WriteResult> {
  const body: PutJsonRequest = { value, encoding };
  let query = '';
  if (lease.kind === 'lease') query = `?lease=${encodeURIComponent(lease.id.trim())}`;
  if (lease.kind === 'ttl') query = `?ttl=${encodeURIComponent(lease.ttl.trim())}`;
  return sendJson<WriteResult>('PUT', `/v1/kv/${keyPath(key)}${query}`, body);
}

export function deleteKey(key: Uint8Array): Promise<DeleteResult> {
  return sendJson<DeleteResult>('DELETE', `/v1/kv/${keyPath(key)}`);
}

export interface CasInput {
  key: string;
  /** null: the key must not exist. */
  expected: string | null;
  /** null: delete the key when the comparison holds. */
  value: string | null;
}

/** POST /v1/cas with UTF-8 strings. */
export function compareAndSwap({ key, expected, value }: CasInput): Promise<CasResult> {
  const body: CasRequest = { key, expected, value, encoding: 'utf8' };
  return sendJson<CasResult>('POST', '/v1/cas', body);
}
