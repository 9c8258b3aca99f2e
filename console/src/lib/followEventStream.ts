// Following a server-sent event stream for as long as a view needs it. EventSource
// reconnects by itself only after a network drop, and only after its own retry delay
// (seconds); when the gateway answers with an error instead (Envoy's 503 while no node
// is healthy, during an election, or with no k6 run behind /k6/events), it gives up for
// good. So on any error, and after too long a silence, the stream is closed and opened
// again here, after a short backoff. Streams carry the signed-in token (openEventSource);
// when the operator signs in or out, every stream is opened again with the new one.

import { subscribeToken } from './credential';
import { CLOSED, openEventSource, refusalOf, type EventStream } from './openEventSource';

/** One handler per SSE event name. Returning true marks a sign of life: the backoff
 * starts over and the silence watch is rearmed. */
export type EventHandlers = Record<string, (data: string) => unknown>;

export interface FollowOptions {
  /** The stream's URL; a function is asked again at every (re)connection, so that a
   * stream that can resume (a watch from an index) asks for where it stopped. */
  url: string | (() => string);
  events: EventHandlers;
  /** Delays before successive reconnect attempts; the last one repeats. */
  reconnectDelaysMs?: readonly number[];
  /** This much time without a sign of life means a dead stream; none, no watch. */
  silenceLimitMs?: number;
  /** What the sign of life is called when its absence is reported ("no status for 5 s"). */
  signOfLife?: string;
  /** A new stream was opened (the first, or after a loss). */
  onOpen?: () => void;
  /** The stream was lost, and why; a new one opens after the backoff. */
  onLost?: (reason: string) => void;
}

// Capped at 2 s: one cheap request per tab every 2 s while down is fine, and a
// stream that comes back is visible again within that.
export const DEFAULT_RECONNECT_DELAYS_MS: readonly number[] = [50, 200, 500, 1000, 2000];

/** Opens the stream and keeps it open until the returned function is called. */
export function followEventStream(options: FollowOptions): () => void {
  const { url, events, silenceLimitMs, onOpen, onLost, signOfLife = 'event' } = options;
  const delays =
    options.reconnectDelaysMs && options.reconnectDelaysMs.length > 0
      ? options.reconnectDelaysMs
      : DEFAULT_RECONNECT_DELAYS_MS;
  let source: EventStream | null = null;
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  let silenceTimer: ReturnType<typeof setTimeout> | undefined;
  let failedAttempts = 0;
  let disposed = false;

  const watchSilence = () => {
    if (silenceLimitMs === undefined) return;
    clearTimeout(silenceTimer);
    silenceTimer = setTimeout(() => {
      lose(`no ${signOfLife} for ${silenceLimitMs / 1000} s`);
    }, silenceLimitMs);
  };

  const connect = () => {
    const es = openEventSource(typeof url === 'function' ? url() : url);
    source = es;
    for (const [name, handle] of Object.entries(events)) {
      es.addEventListener(name, (event) => {
        if (handle(String((event as MessageEvent<unknown>).data)) === true) {
          failedAttempts = 0;
          watchSilence();
        }
      });
    }
    es.addEventListener('error', (event) => {
      lose(refusalOf(event) ?? (es.readyState === CLOSED ? 'stream closed' : 'stream interrupted'));
    });
    watchSilence();
    onOpen?.();
  };

  function lose(reason: string) {
    if (disposed) return;
    source?.close();
    source = null;
    clearTimeout(silenceTimer);
    clearTimeout(reconnectTimer);
    onLost?.(reason);
    const delay = delays[Math.min(failedAttempts, delays.length - 1)] ?? 1000;
    failedAttempts += 1;
    reconnectTimer = setTimeout(connect, delay);
  }

  // A new credential: the stream opens again at once, with it.
  const reopen = () => {
    if (disposed) return;
    source?.close();
    clearTimeout(reconnectTimer);
    clearTimeout(silenceTimer);
    failedAttempts = 0;
    connect();
  };
  const unsubscribe = subscribeToken(reopen);

  connect();
  return () => {
    disposed = true;
    unsubscribe();
    clearTimeout(reconnectTimer);
    clearTimeout(silenceTimer);
    source?.close();
  };
}
