// YCSB workloads A–F over gRPC (strata.v1.KV) through the gateway, open model. The same env as
// ycsb-rest.js, plus STRATA_GRPC_ADDR (host:port; default: the host:port of STRATA_URL).
//
//   WORKLOAD=b RATE=500 DURATION=30s k6 run loadtest/ycsb-grpc.js
//
// Records are loaded in setup() over REST (POST /v1/batch), which the gateway serves on the same
// port.
import grpc from 'k6/net/grpc';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Generator, config, record, notFound, ycsbOptions, loadRun } from './lib/ycsb.js';
import { baseUrl } from './lib/rest.js';
import { b64, connector, grpcAddr, withTokenMetadata } from './lib/grpc.js';

const cfg = config();
const BASE = baseUrl();

const client = new grpc.Client();
client.load(['../proto/strata/v1'], 'kv.proto');
const connect = connector(client, grpcAddr());

export const options = ycsbOptions(cfg, 'grpc');

export function setup() {
  return loadRun(cfg, BASE);
}

let gen = null;
let valueB64 = null;
const PARAMS = withTokenMetadata({ timeout: '5s' });

function get(key, c) {
  const consistency = c.consistency === 'stale' ? 'CONSISTENCY_STALE' : 'CONSISTENCY_LINEARIZABLE';
  const r = client.invoke('strata.v1.KV/Get', { key: b64(key), consistency }, PARAMS);
  const ok = r && (r.status === grpc.StatusOK || r.status === grpc.StatusNotFound);
  if (ok && (r.status === grpc.StatusNotFound || !r.message.found)) notFound.add(1);
  return ok;
}

function put(key) {
  const r = client.invoke('strata.v1.KV/Put', { key: b64(key), value: valueB64 }, PARAMS);
  return r && r.status === grpc.StatusOK;
}

export function ycsb(data) {
  const c = data.cfg;
  if (connect() !== null) {
    record('connect', false, 0);
    sleep(0.2);
    return;
  }
  if (gen === null) {
    gen = new Generator(c, exec.vu.idInTest);
    valueB64 = b64(gen.value);
  }
  const op = gen.next();
  const t0 = Date.now();
  let ok;
  switch (op.op) {
    case 'read':
      ok = get(op.key, c);
      break;
    case 'update':
    case 'insert':
      ok = put(op.key);
      break;
    case 'scan': {
      const r = client.invoke('strata.v1.KV/Scan', {
        range: { start: b64(op.start), end: b64(op.end) },
        limit: op.limit,
        consistency: c.consistency === 'stale' ? 'CONSISTENCY_STALE' : 'CONSISTENCY_LINEARIZABLE',
      }, PARAMS);
      ok = r && r.status === grpc.StatusOK;
      break;
    }
    default:
      ok = get(op.key, c) && put(op.key);
  }
  record(op.op, ok, Date.now() - t0);
}
