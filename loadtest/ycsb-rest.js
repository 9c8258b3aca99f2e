// YCSB workloads A–F over REST through the gateway, open model (arrival rate, not VU count).
//
//   WORKLOAD=a RATE=300 DURATION=30s k6 run loadtest/ycsb-rest.js
//   WORKLOAD=e STAGES=50:10s,400:30s,0:5s k6 run loadtest/ycsb-rest.js      # ramping arrival rate
//
// Env: STRATA_URL, WORKLOAD (a-f), RECORDS (1000), DISTRIBUTION (zipfian|uniform|latest),
// THETA (0.99), VALUE_SIZE (256), READ_CONSISTENCY (linearizable|stale), RATE / DURATION or
// STAGES / START_RATE, PRE_VUS / MAX_VUS, P99_MS (250), ERROR_RATE (0.01). See README.md.
import http from 'k6/http';
import exec from 'k6/execution';
import { Generator, config, record, notFound, ycsbOptions, loadRun } from './lib/ycsb.js';
import { baseUrl, keyUrl, withToken } from './lib/rest.js';

const cfg = config();
const BASE = baseUrl();

export const options = ycsbOptions(cfg, 'rest');

export function setup() {
  return loadRun(cfg, BASE);
}

let gen = null;
const found = http.expectedStatuses(200, 404);
const HEADERS = { 'Content-Type': 'application/octet-stream' };

function get(key, c) {
  const res = http.get(`${keyUrl(BASE, key)}?consistency=${c.consistency}`, withToken({ tags: { name: 'GET /v1/kv/{key}' }, responseCallback: found }));
  if (res.status === 404) notFound.add(1);
  return res;
}

function put(key, value) {
  return http.put(keyUrl(BASE, key), value, withToken({ headers: HEADERS, tags: { name: 'PUT /v1/kv/{key}' } }));
}

export function ycsb(data) {
  const c = data.cfg;
  if (gen === null) gen = new Generator(c, exec.vu.idInTest);
  const op = gen.next();
  const t0 = Date.now();
  let ok;
  switch (op.op) {
    case 'read':
      ok = [200, 404].includes(get(op.key, c).status);
      break;
    case 'update':
    case 'insert':
      ok = put(op.key, op.value).status === 200;
      break;
    case 'scan': {
      const q = `start=${encodeURIComponent(op.start)}&end=${encodeURIComponent(op.end)}&limit=${op.limit}&consistency=${c.consistency}`;
      ok = http.get(`${BASE}/v1/kv?${q}`, withToken({ tags: { name: 'GET /v1/kv?start' } })).status === 200;
      break;
    }
    default: {
      const r = get(op.key, c);
      ok = [200, 404].includes(r.status) && put(op.key, op.value).status === 200;
    }
  }
  record(op.op, ok, Date.now() - t0);
}
