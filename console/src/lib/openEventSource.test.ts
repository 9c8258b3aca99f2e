import { makeToken } from '../test/tokens';
import { signIn, signOut } from './credential';
import { followEventStream } from './followEventStream';
import { openEventSource, refusalOf } from './openEventSource';

// The console's streams go through fetch, with the token when one is kept, as its other
// requests do. The real `eventsource` package here (other tests use the mock).
vi.unmock('eventsource');

interface Sent {
  url: string;
  authorization: string | null;
}

function sseResponse(status: number, body: string): Response {
  if (status !== 200) return new Response(body, { status, headers: { 'content-type': 'application/json' } });
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(body));
      // Left open, as a live stream is.
    },
  });
  return new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

function stubFetch(status: number, body: string): Sent[] {
  const sent: Sent[] = [];
  vi.stubGlobal('fetch', (input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    const url = input instanceof Request ? input.url : input instanceof URL ? input.href : input;
    sent.push({ url, authorization: headers.get('authorization') });
    return Promise.resolve(sseResponse(status, body));
  });
  return sent;
}

function nextEvent(source: EventTarget, type: string): Promise<Event> {
  return new Promise((resolve) => {
    source.addEventListener(type, resolve, { once: true });
  });
}

beforeEach(() => {
  signOut();
});

afterEach(() => {
  signOut();
  vi.unstubAllGlobals();
});

describe('openEventSource', () => {
  it('sends no credential when signed out', async () => {
    const sent = stubFetch(200, 'event: status\ndata: {}\n\n');
    const source = openEventSource('http://127.0.0.1/v1/cluster/events');
    await nextEvent(source, 'status');
    expect(sent).toEqual([{ url: 'http://127.0.0.1/v1/cluster/events', authorization: null }]);
    source.close();
  });

  it('sends the stored token and delivers the named events when signed in', async () => {
    const token = makeToken('alice', 'read');
    signIn(token);
    const sent = stubFetch(200, 'event: status\ndata: {"term":7}\n\n');
    const source = openEventSource('http://127.0.0.1/v1/cluster/events');
    const event = (await nextEvent(source, 'status')) as MessageEvent<string>;
    expect(event.data).toBe('{"term":7}');
    expect(sent).toEqual([{ url: 'http://127.0.0.1/v1/cluster/events', authorization: `Bearer ${token}` }]);
    source.close();
  });

  it('reports a refused stream with its status and what to do', async () => {
    stubFetch(401, '{"code":"UNAUTHENTICATED","message":"no"}');
    const source = openEventSource('http://127.0.0.1/v1/watch?prefix=a');
    const error = await nextEvent(source, 'error');
    expect(refusalOf(error)).toBe('refused (401): this stream needs a token; sign in');
    expect(source.readyState).toBe(2);
    source.close();
  });
});

describe('followEventStream and the credential', () => {
  it('opens the stream again with the new token when the operator signs in, and without it after signing out', async () => {
    const token = makeToken('carol', 'admin');
    const sent = stubFetch(200, 'event: status\ndata: {}\n\n');
    const seen: string[] = [];
    const stop = followEventStream({
      url: 'http://127.0.0.1/v1/cluster/events',
      events: { status: (data) => seen.push(data) },
    });
    await vi.waitFor(() => {
      expect(seen).toHaveLength(1);
    });
    signIn(token);
    await vi.waitFor(() => {
      expect(seen).toHaveLength(2);
    });
    signOut();
    await vi.waitFor(() => {
      expect(seen).toHaveLength(3);
    });
    stop();
    expect(sent.map((s) => s.authorization)).toEqual([null, `Bearer ${token}`, null]);
  });
});
