// REST plumbing shared by the REST scenarios: key URLs, readiness wait, bulk load through
// POST /v1/batch.
import http from 'k6/http';
import { fail, sleep } from 'k6';

export function baseUrl() {
  return (__ENV.STRATA_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
}

// `params` with the token of STRATA_TOKEN (as `strata auth token` prints it) in an
// `Authorization: Bearer` header, for a cluster whose requests without one may not do what the
// scenario does; `params` as they are without it.
export function withToken(params = {}) {
  const token = (__ENV.STRATA_TOKEN || '').trim();
  if (!token) return params;
  return { ...params, headers: { ...(params.headers || {}), Authorization: `Bearer ${token}` } };
}

// Percent-encodes each segment of a key but keeps its '/' separators readable.
export function keyUrl(base, key) {
  return `${base}/v1/kv/${key.split('/').map(encodeURIComponent).join('/')}`;
}

// Waits up to ~10 s for the cluster behind `base` to have a leader.
export function waitReady(base) {
  for (let i = 0; i < 50; i++) {
    const res = http.get(`${base}/health/ready`, {
      tags: { name: 'GET /health/ready' },
      responseCallback: http.expectedStatuses(200, 503),
    });
    if (res.status === 200) return;
    sleep(0.2);
  }
  fail(`cluster not ready at ${base}/health/ready`);
}

// Writes `count` records with keys from `keyOf(i)` in batches of 500.
export function loadRecords(base, count, keyOf, value) {
  for (let start = 0; start < count; start += 500) {
    const ops = [];
    for (let i = start; i < Math.min(count, start + 500); i++) ops.push({ op: 'put', key: keyOf(i), value });
    const res = http.post(`${base}/v1/batch`, JSON.stringify({ ops }), withToken({
      headers: { 'Content-Type': 'application/json' },
      tags: { name: 'load batch' },
    }));
    if (res.status !== 200) fail(`load batch at ${start}: ${res.status} ${res.body}`);
  }
}
