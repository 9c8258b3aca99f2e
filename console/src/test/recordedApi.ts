/**
 * Serves answers recorded from a real cluster (src/test/recorded/, written by
 * scripts/record-payloads.mjs) in place of the network, and keeps every request the
 * view sent, so tests check both what the view shows and what it asked for.
 */
export interface RecordedAnswer {
  status: number;
  body: unknown;
}

export interface SentRequest {
  method: string;
  url: string;
  body: unknown;
  /** The request's headers, names in lower case. */
  headers: Record<string, string>;
}

export interface Route {
  method: string;
  /** Matched against the path and query, e.g. `/v1/kv?` or a RegExp. */
  url: string | RegExp;
  answer: RecordedAnswer | (() => RecordedAnswer);
}

export interface RecordedApi {
  sent: SentRequest[];
  /** Requests with this method whose URL starts with (or matches) `url`. */
  requests: (method: string, url?: string | RegExp) => SentRequest[];
}

function matches(pattern: string | RegExp, url: string): boolean {
  return typeof pattern === 'string' ? url.startsWith(pattern) : pattern.test(url);
}

/** Stubs `fetch`: the first route (in order) matching method and URL answers; others get a 599. */
export function serveRecorded(routes: Route[]): RecordedApi {
  const sent: SentRequest[] = [];
  vi.stubGlobal('fetch', (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = (init?.method ?? 'GET').toUpperCase();
    const raw = init?.body;
    let body: unknown = raw ?? null;
    if (typeof raw === 'string') {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => {
      headers[name] = value;
    });
    sent.push({ method, url, body, headers });
    const route = routes.find((r) => r.method === method && matches(r.url, url));
    if (!route) {
      return Promise.resolve(new Response(`no recorded answer for ${method} ${url}`, { status: 599 }));
    }
    const answer = typeof route.answer === 'function' ? route.answer() : route.answer;
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    return Promise.resolve(new Response(text, { status: answer.status, headers: { 'Content-Type': 'application/json' } }));
  });
  return {
    sent,
    requests: (method, url) => sent.filter((r) => r.method === method && (url === undefined || matches(url, r.url))),
  };
}
