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
import exec from 'k6/execution';
import { b64, connector, grpcAddr, withTokenMetadata } from './lib/grpc.js';
import { RUN, smokeOptions } from './lib/smoke.js';

const ADDR = grpcAddr();

const client = new grpc.Client();
client.load(['../proto/strata/v1'], 'kv.proto');
const connect = connector(client, ADDR);

export const options = smokeOptions('smoke_grpc', {
  grpc_req_duration: ['p(99)<250'],
  checks: ['rate>0.99'],
});

export default function () {
  const err = connect();
  if (err !== null) {
    check(null, { 'grpc connect': () => false });
    console.error(`connect ${ADDR}: ${err}`);
    sleep(0.5);
    return;
  }

  const key = `smoke-grpc/${RUN}/${exec.vu.idInTest}/${exec.vu.iterationInScenario}`;
  const value = `v-${key}-${Math.random().toString(36).slice(2)}`;
  const params = withTokenMetadata({ timeout: '5s' });

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
