// Smoke test of the gRPC API (strata.v1.KV) through the Envoy gateway: every iteration writes a
// unique key with Put and reads it back with Get.
//
//   k6 run loadtest/smoke-grpc.js                                   # gateway at 127.0.0.1:8080
//   STRATA_GRPC_ADDR=127.0.0.1:7001 k6 run loadtest/smoke-grpc.js   # one node directly
//
// The proto is loaded from ../proto/strata/v1/kv.proto (relative to this script). Exits non-zero
// (k6 exit code 99) when a threshold fails.
import grpc from 'k6/net/grpc';
import { check, sleep } from 'k6';
import encoding from 'k6/encoding';
import exec from 'k6/execution';

function defaultAddr() {
  // Same gateway as the REST smoke test: STRATA_URL=http://host:port -> host:port.
  const url = __ENV.STRATA_URL || 'http://127.0.0.1:8080';
  return url.replace(/^[a-z]+:\/\//, '').replace(/\/.*$/, '');
}

const ADDR = __ENV.STRATA_GRPC_ADDR || __ENV.STRATA_ADDR || defaultAddr();
const RUN = __ENV.SMOKE_RUN_ID || `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e9).toString(36)}`;

const client = new grpc.Client();
client.load(['../proto/strata/v1'], 'kv.proto');

export const options = {
  scenarios: {
    smoke_grpc: {
      executor: 'constant-vus',
      vus: Number(__ENV.SMOKE_VUS || 4),
      duration: __ENV.SMOKE_DURATION || '10s',
      gracefulStop: '5s',
    },
  },
  thresholds: {
    grpc_req_duration: ['p(99)<250'],
    checks: ['rate>0.99'],
  },
  summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
};

// Connect once per VU. A module-level flag (not __ITER === 0) so that a failed first connect is
// retried on the next iteration instead of every later call failing with "no gRPC connection".
let connected = false;

function b64(s) {
  return encoding.b64encode(s);
}

export default function () {
  if (!connected) {
    try {
      client.connect(ADDR, { plaintext: true, timeout: '5s' });
      connected = true;
    } catch (e) {
      check(null, { 'grpc connect': () => false });
      console.error(`connect ${ADDR}: ${e}`);
      sleep(0.5);
      return;
    }
  }

  const key = `smoke-grpc/${RUN}/${exec.vu.idInTest}/${exec.vu.iterationInScenario}`;
  const value = `v-${key}-${Math.random().toString(36).slice(2)}`;
  const params = { timeout: '5s' };

  const put = client.invoke('strata.v1.KV/Put', { key: b64(key), value: b64(value) }, params);
  check(put, {
    'Put OK': (r) => r && r.status === grpc.StatusOK,
    // uint64 fields arrive as JSON strings.
    'Put header has an index': (r) => r && r.message && r.message.header && Number(r.message.header.index) > 0,
  });

  const get = client.invoke('strata.v1.KV/Get', { key: b64(key) }, params);
  check(get, {
    'Get OK': (r) => r && r.status === grpc.StatusOK,
    'Get found': (r) => r && r.message && r.message.found === true,
    'Get returns the value written': (r) => r && r.message && r.message.value === b64(value),
  });

  // An absent key: OK with found=false (a node may also answer NOT_FOUND; both mean "absent").
  if (exec.vu.iterationInScenario % 8 === 0) {
    const miss = client.invoke('strata.v1.KV/Get', { key: b64(`${key}/absent`) }, params);
    check(miss, {
      'Get absent is not found': (r) => r && ((r.status === grpc.StatusOK && r.message && !r.message.found) ||
        r.status === grpc.StatusNotFound),
    });
  }
}
