import { credentialHeaders, credentialOf, storedToken } from '../lib/credential';
import { ApiError } from './http';
import type { ApiErrorBody } from './types';

function errorBodyOf(text: string): ApiErrorBody | null {
  try {
    const value: unknown = JSON.parse(text);
    if (
      typeof value === 'object' &&
      value !== null &&
      typeof (value as Record<string, unknown>).code === 'string' &&
      typeof (value as Record<string, unknown>).message === 'string'
    ) {
      return value as ApiErrorBody;
    }
  } catch {
    // Not JSON: a proxy's plain-text error page; the status and text say what happened.
  }
  return null;
}

export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

/**
 * Send a request to a same-origin JSON endpoint and answer its parsed body. `body`, when
 * given, is sent as JSON. Any non-2xx answer becomes an {@link ApiError} carrying the
 * node's `{"code","message"}` as it came, so views can show the API's own words. The
 * stored token, if any, goes along as `authorization: Bearer <token>`.
 *
 * The result type is the caller's claim, taken from the generated contract types; the
 * endpoint paths with parameters are not expressible through `getJson`'s path map.
 */
export async function sendJson<Result>(
  method: Method,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<Result> {
  const token = storedToken();
  const headers: Record<string, string> = { Accept: 'application/json', ...credentialHeaders(token) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await response.text();
  if (!response.ok) {
    throw new ApiError(response.status, errorBodyOf(text), text.slice(0, 200), credentialOf(token));
  }
  return JSON.parse(text) as Result;
}
