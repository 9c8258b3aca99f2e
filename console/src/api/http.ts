import { credentialHeaders, credentialOf, storedToken, type Credential } from '../lib/credential';
import type { ApiErrorBody, JsonGetPath, JsonGetResponse } from './types';

/**
 * A non-2xx answer. `body` is the node's `{"code","message"}` object when the answer
 * carried one; a gateway (Envoy) error such as "no healthy upstream" has none.
 * `sentAs` is who the request ran as: the token it carried, or anonymous.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly body: ApiErrorBody | null;
  readonly sentAs: Credential;

  constructor(
    status: number,
    body: ApiErrorBody | null,
    fallbackText: string,
    sentAs: Credential = { kind: 'anonymous' },
  ) {
    super(body ? `${body.code}: ${body.message}` : `HTTP ${status}: ${fallbackText}`);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.sentAs = sentAs;
  }
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Record<string, unknown>).code === 'string' &&
    typeof (value as Record<string, unknown>).message === 'string'
  );
}

/**
 * GET a JSON endpoint of the contract. Paths are relative: the console is always
 * served from the same origin as the API (Envoy in production, the Vite proxy in dev).
 * The result is the parsed body as the contract types it; callers that must not trust
 * the shape (live views) validate it themselves. The stored token, if any, goes along as
 * `authorization: Bearer <token>` (src/lib/credential.ts).
 */
export async function getJson<P extends JsonGetPath>(
  path: P,
  signal?: AbortSignal,
): Promise<JsonGetResponse<P>> {
  const token = storedToken();
  const response = await fetch(path, {
    headers: { Accept: 'application/json', ...credentialHeaders(token) },
    signal,
  });
  const text = await response.text();
  if (!response.ok) {
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: a proxy's plain-text error page. Keep the text for the message.
    }
    throw new ApiError(response.status, isErrorBody(body) ? body : null, text.slice(0, 200), credentialOf(token));
  }
  return JSON.parse(text) as JsonGetResponse<P>;
}
