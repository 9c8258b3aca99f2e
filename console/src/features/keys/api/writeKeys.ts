import { sendJson } from '../../../api/send';
import { keyPath } from './bytes';
import type { CasRequest, CasResult, DeleteResult, PutJsonRequest, WriteResult } from './types';

/** How a typed value is sent: as the text itself (UTF-8), or as base64 the API decodes. */
export type ValueEncoding = NonNullable<PutJsonRequest['encoding']>;

/**
 * PUT /v1/kv/{key}. The value goes as typed, in `encoding`: the API decodes and checks
 * it, so a malformed base64 value comes back as the API's own INVALID_ARGUMENT.
 */
export function putValue(key: Uint8Array, value: string, encoding: ValueEncoding): Promise<WriteResult> {
  const body: PutJsonRequest = { value, encoding };
  return sendJson<WriteResult>('PUT', `/v1/kv/${keyPath(key)}`, body);
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
