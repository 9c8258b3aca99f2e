// gRPC plumbing shared by the gRPC scenarios (smoke-grpc.js, ycsb-grpc.js): the address to dial,
// base64 for `bytes` fields, and a connection made once per VU. Each script loads the proto itself,
// since k6 resolves the proto's path from the script.
import encoding from 'k6/encoding';
import { baseUrl } from './rest.js';

// STRATA_GRPC_ADDR or STRATA_ADDR (host:port); by default the gateway of the REST scenarios, which
// serves gRPC on the same port: STRATA_URL=http://host:port -> host:port.
export function grpcAddr() {
  return __ENV.STRATA_GRPC_ADDR || __ENV.STRATA_ADDR || baseUrl().replace(/^[a-z]+:\/\//, '').replace(/\/.*$/, '');
}

// `params` with the token of STRATA_TOKEN in the `authorization` metadata (see withToken in
// rest.js); `params` as they are without it.
export function withTokenMetadata(params = {}) {
  const token = (__ENV.STRATA_TOKEN || '').trim();
  if (!token) return params;
  return { ...params, metadata: { ...(params.metadata || {}), authorization: `Bearer ${token}` } };
}

// gRPC `bytes` fields are base64 in k6's JSON mapping.
export function b64(s) {
  return encoding.b64encode(s);
}

// A function that connects `client` to `addr` the first time it is called and again after a failed
// attempt, and returns the error of a failed attempt (null when connected). It keeps its own flag
// rather than testing __ITER === 0, so that a failed first connect is retried on the next iteration
// instead of every later call failing with "no gRPC connection".
export function connector(client, addr) {
  let connected = false;
  return () => {
    if (connected) return null;
    try {
      client.connect(addr, { plaintext: true, timeout: '5s' });
      connected = true;
      return null;
    } catch (e) {
      return e;
    }
  };
}
