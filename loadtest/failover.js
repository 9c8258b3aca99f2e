// Failover scenario: a steady open-model stream of writes (unique keys) through the gateway while
// failover.sh kills the leader with SIGKILL mid-run. Every request's outcome goes to the
// `failover_request` trend (tag ok=true|false) so that failover_window.py can place each request on
// the time line (k6 --out json) and report the error window around the kill.
//
//   loadtest/failover.sh --url http://127.0.0.1:8080 --run-dir .run/demo      # does everything
//   PROTOCOL=grpc RATE=200 DURATION=20s k6 run loadtest/failover.js          # the load alone
//
// Env: STRATA_URL, STRATA_GRPC_ADDR, PROTOCOL (rest|grpc), RATE (200/s), DURATION (20s),
// TIMEOUT (5s per request), FAILOVER_ERROR_RATE (0.05: the run fails above it).
import http from 'k6/http';
import grpc from 'k6/net/grpc';
import encoding from 'k6/encoding';
import exec from 'k6/execution';
import { Trend, Rate } from 'k6/metrics';
import { baseUrl, keyUrl, waitReady, withToken } from './lib/rest.js';
import { withTokenMetadata } from './lib/grpc.js';
import { randomValue } from './lib/ycsb.js';

const BASE = baseUrl();
const PROTOCOL = (__ENV.PROTOCOL || 'rest').toLowerCase();
const ADDR = __ENV.STRATA_GRPC_ADDR || BASE.replace(/^[a-z]+:\/\//, '').replace(/\/.*$/, '');
const TIMEOUT = __ENV.TIMEOUT || '5s';
const RUN = `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;

const request = new Trend('failover_request', true);
const failed = new Rate('failover_errors');

const client = new grpc.Client();
client.load(['../proto/strata/v1'], 'kv.proto');

export const options = {
  scenarios: {
    failover_writes: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE || 200),
      timeUnit: '1s',
      duration: __ENV.DURATION || '20s',
      preAllocatedVUs: Number(__ENV.PRE_VUS || 50),
      maxVUs: Number(__ENV.MAX_VUS || 400),
      gracefulStop: '10s',
    },
  },
  thresholds: {
    failover_errors: [`rate<${Number(__ENV.FAILOVER_ERROR_RATE || 0.05)}`],
  },
  summaryTrendStats: ['avg', 'med', 'p(99)', 'max'],
};

export function setup() {
  waitReady(BASE);
}

let connected = false;
const value = randomValue(256);
const valueB64 = encoding.b64encode(value);

function send(key) {
  if (PROTOCOL === 'grpc') {
    if (!connected) {
      client.connect(ADDR, { plaintext: true, timeout: TIMEOUT });
      connected = true;
    }
    const r = client.invoke('strata.v1.KV/Put', { key: encoding.b64encode(key), value: valueB64 }, withTokenMetadata({ timeout: TIMEOUT }));
    return r && r.status === grpc.StatusOK;
  }
  const r = http.put(keyUrl(BASE, key), value, withToken({
    headers: { 'Content-Type': 'application/octet-stream' },
    timeout: TIMEOUT,
    tags: { name: 'PUT /v1/kv/{key}' },
  }));
  return r.status === 200;
}

export default function () {
  const key = `failover/${RUN}/${exec.vu.idInTest}/${exec.vu.iterationInScenario}`;
  const t0 = Date.now();
  let ok = false;
  try {
    ok = send(key);
  } catch (e) {
    connected = false;
  }
  // The sample's timestamp is its end; the send time is end - value.
  request.add(Date.now() - t0, { ok: String(ok) });
  failed.add(!ok);
}
