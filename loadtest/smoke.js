// Smoke test of the REST API through the Envoy gateway: every iteration writes a unique key,
// reads it back (raw and as JSON) and checks status, headers and body.
//
//   k6 run loadtest/smoke.js                                  # gateway at http://127.0.0.1:8080
//   STRATA_URL=http://127.0.0.1:7001 k6 run loadtest/smoke.js # one node directly
//
// Exits non-zero (k6 exit code 99) when a threshold fails.
import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
import { baseUrl, keyUrl, waitReady, withToken } from './lib/rest.js';
import { RUN, smokeOptions } from './lib/smoke.js';

const BASE = baseUrl();

export const options = smokeOptions('smoke', {
  http_req_failed: ['rate<0.01'],
  http_req_duration: ['p(99)<250'],
  checks: ['rate>0.99'],
});

function json(res) {
  try {
    return res.json();
  } catch (_) {
    return null;
  }
}

function isU64(v) {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0;
}

export function setup() {
  // Fail fast, with a readable message, when the gateway or the cluster is not up.
  waitReady(BASE);
  return { run: RUN };
}

export default function (data) {
  const key = `smoke/${data.run}/${exec.vu.idInTest}/${exec.vu.iterationInScenario}`;
  const value = `v-${key}-${Math.random().toString(36).slice(2)}`;

  const put = http.put(keyUrl(BASE, key), value, withToken({
    headers: { 'Content-Type': 'application/octet-stream' },
    tags: { name: 'PUT /v1/kv/{key}' },
  }));
  const w = json(put);
  check(put, {
    'put 200': (r) => r.status === 200,
    'put result has node_id, term, index, leader_id': () =>
      w !== null && isU64(w.node_id) && isU64(w.term) && isU64(w.index) && w.index > 0 && isU64(w.leader_id),
    'put x-strata-node header': (r) => /^[0-9]+$/.test(r.headers['X-Strata-Node'] || ''),
  });

  const get = http.get(keyUrl(BASE, key), withToken({ tags: { name: 'GET /v1/kv/{key}' } }));
  check(get, {
    'get 200': (r) => r.status === 200,
    'get octet-stream': (r) => (r.headers['Content-Type'] || '').startsWith('application/octet-stream'),
    'get returns the value written': (r) => r.body === value,
  });

  // Every fourth iteration also reads the JSON form.
  if (exec.vu.iterationInScenario % 4 === 0) {
    const gj = http.get(keyUrl(BASE, key), withToken({ headers: { Accept: 'application/json' }, tags: { name: 'GET /v1/kv/{key} json' } }));
    const g = json(gj);
    check(gj, {
      'get json 200': (r) => r.status === 200,
      'get json body': () => g !== null && g.key === key && g.value === value && g.encoding === 'utf8' &&
        isU64(g.index) && (w === null || g.index >= w.index),
    });
  }

  // A key that was never written is a 404 with the error object (expected, so not a failed request).
  if (exec.vu.iterationInScenario % 8 === 0) {
    const miss = http.get(keyUrl(BASE, `${key}/absent`), withToken({
      tags: { name: 'GET /v1/kv/{key} missing' },
      responseCallback: http.expectedStatuses(404),
    }));
    const e = json(miss);
    check(miss, {
      'missing key 404': (r) => r.status === 404,
      'missing key error object': () => e !== null && e.code === 'NOT_FOUND' && typeof e.message === 'string',
    });
  }
}
