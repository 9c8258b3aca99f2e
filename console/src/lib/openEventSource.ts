// Opening a server-sent event stream with the operator's credential. The browser's own
// EventSource can neither send a header nor tell why a stream was refused, so the console
// opens its streams with the `eventsource` package: the same interface, over fetch, which
// sends `authorization: Bearer <token>` like every other request (src/lib/credential.ts)
// and reports a refusal's HTTP status. Signed out, the stream goes without a token and
// runs with the nodes' anonymous role.

import { EventSource as FetchEventSource } from 'eventsource';
import { credentialHeaders, storedToken } from './credential';

/** What a view needs of a stream: named events, `error`, its state and `close`. */
export interface EventStream extends EventTarget {
  readonly readyState: number;
  close(): void;
}

/** Why a stream failed, when the server said so: the HTTP status of a refused stream. */
export function refusalOf(event: Event): string | null {
  const code = (event as Event & { code?: unknown }).code;
  if (typeof code !== 'number') return null;
  if (code === 401) return 'refused (401): this stream needs a token; sign in';
  if (code === 403) return 'refused (403): the signed-in role may not read this';
  return `refused (${code})`;
}

/** Opens `url` with the stored token (read now), or without one when signed out. */
export function openEventSource(url: string): EventStream {
  const token = storedToken();
  return new FetchEventSource(url, {
    fetch: (input, init) =>
      fetch(input, { ...init, headers: { ...init.headers, ...credentialHeaders(token) } }),
  });
}

/** The closed state (EventSource.CLOSED). */
export const CLOSED = 2;
