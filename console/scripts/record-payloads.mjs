// Records real API answers for the component tests: writes a few keys into a running
// cluster, asks the endpoints the keys, actions, load and cluster views use, and saves each
// answer (status and body, as received) under src/test/recorded/<name>.json, one file per
// recorder below (RECORD_ONLY=<name>,... picks some). Run it against a fresh cluster with
// its load runner (the keys it writes are part of the payloads):
//
//   STRATA_URL=http://127.0.0.1:8080 STRATA_TOKEN_FILE=<run-dir>/admin.token node scripts/record-payloads.mjs
//
// Every request carries the admin token of STRATA_TOKEN_FILE (membership, snapshots and
// compaction need it). `RECORD_ONLY=auth` records the refusals: also set
// STRATA_WRITE_TOKEN_FILE to a file holding a write token, made by
// `strata auth token --key <run-dir>/auth/signing-key.pem --role write --subject writer`.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const base = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';
const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'test', 'recorded');
const only = process.env.RECORD_ONLY?.split(',') ?? null;
const tokenIn = (file) => (file ? readFileSync(file, 'utf8').trim() : null);
const adminToken = tokenIn(process.env.STRATA_TOKEN_FILE);

/** `token`: the bearer token to send (the admin token unless given; null sends none). */
async function call(method, path, body, contentType = 'application/json', token = adminToken) {
  const response = await fetch(base + path, {
    method,
    headers: {
      Accept: 'application/json',
      ...(body !== undefined ? { 'Content-Type': contentType } : {}),
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed };
}

const b64 = (text) => Buffer.from(text).toString('base64');

async function recordKeys() {
  await call('PUT', '/v1/kv/users/alice', { value: JSON.stringify({ name: 'Alice', roles: ['admin', 'ops'] }) });
  await call('PUT', '/v1/kv/users/bob', 'plain text for bob', 'application/octet-stream');
  await call('PUT', '/v1/kv/blobs/raw', new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x20, 0x62, 0x69, 0x6e]), 'application/octet-stream');
  for (let i = 1; i <= 30; i++) {
    await call('PUT', `/v1/kv/page/k${String(i).padStart(2, '0')}`, `v${i}`, 'application/octet-stream');
  }
  const scan = (prefix, token) =>
    `/v1/kv?keys_only=true&encoding=base64&limit=25&prefix=${encodeURIComponent(b64(prefix))}` +
    (token ? `&page_token=${encodeURIComponent(token)}` : '');
  const page1 = await call('GET', scan('page/'));
  const page2 = await call('GET', scan('page/', page1.body.next_page_token));
  return {
    scanUsers: await call('GET', scan('users/')),
    scanPage1: page1,
    scanPage2: page2,
    scanEmpty: await call('GET', scan('nothing-here/')),
    getJson: await call('GET', '/v1/kv/users/alice?encoding=base64'),
    getText: await call('GET', '/v1/kv/users/bob?encoding=base64'),
    getBinary: await call('GET', '/v1/kv/blobs/raw?encoding=base64'),
    getMissing: await call('GET', '/v1/kv/no-such-key?encoding=base64'),
    putOk: await call('PUT', '/v1/kv/users/carol', { value: 'carol', encoding: 'utf8' }),
    putBadBase64: await call('PUT', '/v1/kv/users/carol', { value: '!!not base64', encoding: 'base64' }),
    casMiss: await call('POST', '/v1/cas', { key: 'users/bob', expected: 'wrong', value: 'new', encoding: 'utf8' }),
    casHit: await call('POST', '/v1/cas', { key: 'users/carol', expected: 'carol', value: 'carol 2', encoding: 'utf8' }),
    casEmptyKey: await call('POST', '/v1/cas', { key: '', expected: null, value: 'x', encoding: 'utf8' }),
    deleteOk: await call('DELETE', '/v1/kv/users/carol'),
  };
}

async function recordActions() {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const before = await call('GET', '/v1/cluster/members');
  const statusBefore = await call('GET', '/v1/cluster/status');
  const leader = statusBefore.body.leader_id;
  const other = before.body.members.map((m) => m.id).find((id) => id !== leader);
  const leaving = before.body.members.map((m) => m.id).find((id) => id !== leader && id !== other);
  const address = before.body.members.find((m) => m.id === leaving).address;
  const removed = await call('DELETE', `/v1/cluster/members/${leaving}`);
  const added = await call('POST', '/v1/cluster/members', { id: leaving, address });
  await sleep(1500);
  const statusWithLearner = await call('GET', '/v1/cluster/status');
  let promoted;
  for (let i = 0; i < 20; i++) {
    promoted = await call('POST', `/v1/cluster/members/${leaving}/promote`);
    if (promoted.status === 200) break;
    await sleep(500);
  }
  return {
    membersBefore: before,
    statusBefore,
    removed,
    added,
    statusWithLearner,
    promoted,
    transfer: await call('POST', '/v1/cluster/leader', { target_id: other }),
    transferToStranger: await call('POST', '/v1/cluster/leader', { target_id: 9 }),
    removeStranger: await call('DELETE', '/v1/cluster/members/9'),
    addBadAddress: await call('POST', '/v1/cluster/members', { id: 7, address: 'not an address' }),
    compactAll: await call('POST', '/v1/cluster/compact', { node_ids: [] }),
    snapshotAll: await call('POST', '/v1/cluster/snapshot', { node_ids: [] }),
    snapshotStranger: await call('POST', '/v1/cluster/snapshot', { node_ids: [9] }),
  };
}

async function recordLoad() {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const payloads = {
    scenarios: await call('GET', '/load/scenarios'),
    runIdle: await call('GET', '/load/run'),
    k6Absent: await call('GET', '/k6/v1/metrics'),
    runInvalid: await call('POST', '/load/run', { scenario: 'smoke', rate_per_s: 5000, duration_s: 10 }),
    runStarted: await call('POST', '/load/run', { scenario: 'smoke', rate_per_s: 20, duration_s: 8 }),
  };
  payloads.runConflict = await call('POST', '/load/run', { scenario: 'ycsb-a', rate_per_s: 20, duration_s: 8 });
  await sleep(3000);
  payloads.statsA = await call('GET', '/v1/cluster/stats');
  payloads.runRunning = await call('GET', '/load/run');
  await sleep(2000);
  payloads.statsB = await call('GET', '/v1/cluster/stats');
  for (let i = 0; i < 60; i++) {
    payloads.runEnded = await call('GET', '/load/run');
    if (!['running', 'stopping'].includes(payloads.runEnded.body.state)) break;
    await sleep(500);
  }
  return payloads;
}

/** The raw text a server-sent event stream delivers in its first `ms`. */
async function recordStream(path, ms) {
  const controller = new AbortController();
  const response = await fetch(base + path, { headers: { Accept: 'text/event-stream' }, signal: controller.signal });
  const decoder = new TextDecoder();
  let text = '';
  const timer = setTimeout(() => controller.abort(), ms);
  try {
    for await (const chunk of response.body) text += decoder.decode(chunk, { stream: true });
  } catch (e) {
    if (e.name !== 'AbortError') throw e;
  } finally {
    clearTimeout(timer);
  }
  return { status: response.status, body: text };
}

/** k6's event stream during a smoke run (it replays from the run's start). */
async function recordK6() {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const started = await call('POST', '/load/run', { scenario: 'smoke', rate_per_s: 20, duration_s: 8 });
  if (started.status !== 202) throw new Error(`the smoke run did not start: ${JSON.stringify(started)}`);
  await sleep(2000);
  const payloads = { k6Events: await recordStream('/k6/events', 4000) };
  for (let i = 0; i < 60; i++) {
    const run = await call('GET', '/load/run');
    if (!['running', 'stopping'].includes(run.body.state)) break;
    await sleep(500);
  }
  return payloads;
}

/**
 * The load runner's state as it pushes it (GET /load/run/events, raw): followed from
 * before a 4 s smoke run starts until after it finished, then a 30 s run stopped after
 * 2 s, and a heartbeat after it (the view sent again without a change).
 */
async function recordRunEvents() {
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const stream = recordStream('/load/run/events', 20000);
  await sleep(500);
  const short = await call('POST', '/load/run', { scenario: 'smoke', rate_per_s: 20, duration_s: 4 });
  if (short.status !== 202) throw new Error(`the smoke run did not start: ${JSON.stringify(short)}`);
  for (let i = 0; i < 60; i++) {
    const run = await call('GET', '/load/run');
    if (!['running', 'stopping'].includes(run.body.state)) break;
    await sleep(250);
  }
  const long = await call('POST', '/load/run', { scenario: 'smoke', rate_per_s: 20, duration_s: 30 });
  if (long.status !== 202) throw new Error(`the second run did not start: ${JSON.stringify(long)}`);
  await sleep(2000);
  const stopped = await call('DELETE', '/load/run');
  const runEvents = await stream;
  return { runEvents, stopped, runAfter: await call('GET', '/load/run') };
}

/**
 * What the Cluster view reads besides its event stream: GET /v1/cluster/status (the
 * snapshot it shows while the stream is being reopened), and the members and stats of
 * the same moment.
 */
async function recordCluster() {
  return {
    status: await call('GET', '/v1/cluster/status'),
    members: await call('GET', '/v1/cluster/members'),
    stats: await call('GET', '/v1/cluster/stats'),
  };
}

/** A scan's pages with a write between them, and a page whose state is gone. */
async function recordScan() {
  for (const k of ['a', 'b', 'c']) await call('PUT', `/v1/kv/scan/${k}`, 'old', 'application/octet-stream');
  const query = '/v1/kv?keys_only=true&encoding=base64&limit=2&prefix=' + encodeURIComponent(b64('scan/'));
  const first = await call('GET', query);
  await call('PUT', '/v1/kv/scan/b2', 'new', 'application/octet-stream');
  const token = encodeURIComponent(first.body.next_page_token);
  const second = await call('GET', `${query}&page_token=${token}`);
  // The second page was the last: its state went with it.
  const expired = await call('GET', `${query}&page_token=${token}`);
  return { first, second, expired };
}

/**
 * A watch's events under `watch/` (a put, then a batch that puts and deletes), and the
 * refusal of a start the history no longer holds. Record it alone, against a cluster
 * that keeps a short history and runs no canary:
 * `strata-cluster up --no-canary … -- --watch-history 5`, then `RECORD_ONLY=watch`.
 */
async function recordWatch() {
  const first = await call('PUT', '/v1/kv/watch/a', '1', 'application/octet-stream');
  await call('POST', '/v1/batch', { ops: [{ op: 'put', key: 'watch/b', value: 'two' }, { op: 'delete', key: 'watch/a' }] });
  const prefix = encodeURIComponent(b64('watch/'));
  // From the first put: the replay holds both writes, then progress events.
  const query = `encoding=base64&progress_ms=500&prefix=${prefix}&from_index=${first.body.index}`;
  const events = await recordStream(`/v1/watch?${query}`, 1500);
  for (let i = 0; i < 8; i++) await call('PUT', `/v1/kv/other/${i}`, 'x', 'application/octet-stream');
  const compacted = await call('GET', `/v1/watch?encoding=base64&prefix=${prefix}&from_index=${first.body.index}`);
  return { events, compacted };
}

/**
 * Leases: one granted with two keys put under it, one a put granted itself (`?ttl=`),
 * their list and time to live, a keep-alive, the refusals (an id taken, a TTL out of
 * range, a lease that does not exist) and a revoke with what it leaves behind.
 */
async function recordLeases() {
  const granted = await call('POST', '/v1/leases', { ttl: '60s' });
  const id = granted.body.id;
  const putUnderLease = await call('PUT', `/v1/kv/lease/a?lease=${id}`, { value: 'held by the lease', encoding: 'utf8' });
  await call('PUT', `/v1/kv/lease/b?lease=${id}`, { value: JSON.stringify({ owner: 'worker-1' }), encoding: 'utf8' });
  const putWithTtl = await call('PUT', '/v1/kv/lease/own?ttl=30s', { value: 'own lease', encoding: 'utf8' });
  const own = putWithTtl.body.lease;
  const payloads = {
    granted,
    putUnderLease,
    putWithTtl,
    list: await call('GET', '/v1/leases'),
    timeToLive: await call('GET', `/v1/leases/${id}?keys=true&encoding=base64`),
    timeToLiveOwn: await call('GET', `/v1/leases/${own}?keys=true&encoding=base64`),
    keptAlive: await call('POST', `/v1/leases/${id}/keepalive`),
    grantTaken: await call('POST', '/v1/leases', { ttl: '60s', id }),
    grantTtlTooShort: await call('POST', '/v1/leases', { ttl: '10ms' }),
    grantTtlMalformed: await call('POST', '/v1/leases', { ttl: 'soon' }),
    putUnknownLease: await call('PUT', '/v1/kv/lease/c?lease=999999', { value: 'x', encoding: 'utf8' }),
    revoked: await call('DELETE', `/v1/leases/${id}`),
  };
  payloads.keyAfterRevoke = await call('GET', '/v1/kv/lease/a?encoding=base64');
  payloads.keepAliveEnded = await call('POST', `/v1/leases/${id}/keepalive`);
  payloads.revokeEnded = await call('DELETE', `/v1/leases/${id}`);
  payloads.timeToLiveEnded = await call('GET', `/v1/leases/${id}?keys=true&encoding=base64`);
  payloads.listAfterRevoke = await call('GET', '/v1/leases');
  await call('DELETE', `/v1/leases/${own}`);
  return payloads;
}

/**
 * Transactions under `txn/`: one whose compares (every target) hold and whose success
 * branch runs every kind of operation, one whose stale `mod_index` sends it down the
 * failure branch, one reading a binary value, and the refusals of malformed ones.
 */
async function recordTxn() {
  await call('PUT', '/v1/kv/txn/acct/a', { value: '5', encoding: 'utf8' });
  await call('PUT', '/v1/kv/txn/acct/b', { value: JSON.stringify({ balance: 9, owner: 'bob' }), encoding: 'utf8' });
  await call('PUT', '/v1/kv/txn/old', { value: 'to be deleted', encoding: 'utf8' });
  await call('PUT', '/v1/kv/txn/blob', new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x20, 0x62, 0x69, 0x6e]), 'application/octet-stream');
  const lease = await call('POST', '/v1/leases', { ttl: '120s' });
  const a = await call('GET', '/v1/kv/txn/acct/a?encoding=base64');
  const { create_index: created, mod_index: modified } = a.body;
  const succeeded = await call('POST', '/v1/txn', {
    compare: [
      { key: 'txn/acct/a', op: 'equal', value: '5' },
      { key: 'txn/acct/b', op: 'equal', exists: true },
      { key: 'txn/acct/a', op: 'greater', create_index: created - 1 },
      { key: 'txn/acct/a', op: 'equal', mod_index: modified },
      { key: 'txn/acct/a', op: 'equal', lease: 0 },
      { key: 'txn/acct/b', op: 'less', value: '{"c' },
      { key: 'txn/none', op: 'not_equal', exists: true },
    ],
    success: [
      { op: 'put', key: 'txn/acct/a', value: '6', lease: lease.body.id },
      { op: 'delete', key: 'txn/old' },
      { op: 'delete', key: 'txn/none' },
      { op: 'get', key: 'txn/acct/b' },
      { op: 'get', key: 'txn/none' },
      { op: 'range', start: 'txn/acct/', end: 'txn/acct0', limit: 10 },
      { op: 'range', start: 'txn/', end: 'txn0', limit: 1 },
    ],
    failure: [{ op: 'get', key: 'txn/acct/a' }],
    encoding: 'utf8',
  });
  const failed = await call('POST', '/v1/txn', {
    compare: [{ key: 'txn/acct/a', op: 'equal', mod_index: modified }],
    success: [{ op: 'put', key: 'txn/acct/a', value: '7' }],
    failure: [
      { op: 'get', key: 'txn/acct/a' },
      { op: 'range', start: 'txn/acct/', end: 'txn/acct0' },
    ],
    encoding: 'utf8',
  });
  const payloads = {
    lease,
    getBefore: a,
    succeeded,
    failed,
    binary: await call('POST', '/v1/txn', { success: [{ op: 'get', key: 'txn/blob' }], encoding: 'utf8' }),
    noTarget: await call('POST', '/v1/txn', { compare: [{ key: 'txn/acct/a', op: 'equal' }], encoding: 'utf8' }),
    existsLess: await call('POST', '/v1/txn', { compare: [{ key: 'txn/acct/a', op: 'less', exists: true }], encoding: 'utf8' }),
    putWithoutValue: await call('POST', '/v1/txn', { success: [{ op: 'put', key: 'txn/acct/a' }], encoding: 'utf8' }),
    unknownLease: await call('POST', '/v1/txn', {
      success: [{ op: 'put', key: 'txn/acct/a', value: '8', lease: 999999 }],
      encoding: 'utf8',
    }),
  };
  await call('DELETE', `/v1/leases/${lease.body.id}`);
  return payloads;
}

/**
 * The nodes' refusals: an admin action without a token (401) and with a write token (403),
 * and a put with a token that is no token (401).
 */
async function recordAuth() {
  const writeToken = tokenIn(process.env.STRATA_WRITE_TOKEN_FILE);
  if (!writeToken) throw new Error('RECORD_ONLY=auth needs STRATA_WRITE_TOKEN_FILE (a write token)');
  const leaving = (await call('GET', '/v1/cluster/members')).body.members.at(-1).id;
  return {
    removeAnonymous: await call('DELETE', `/v1/cluster/members/${leaving}`, undefined, undefined, null),
    removeAsWriter: await call('DELETE', `/v1/cluster/members/${leaving}`, undefined, undefined, writeToken),
    putRefusedToken: await call('PUT', '/v1/kv/users/dave', { value: 'dave', encoding: 'utf8' }, undefined, 'abc.def.ghi'),
  };
}

/**
 * A split on the Actions view: a range split at `m`, the same split again (nothing split),
 * an empty key, and the status after it. Last in a recording: it leaves two ranges.
 */
async function recordRanges() {
  return {
    split: await call('POST', '/v1/cluster/ranges/split', { key: 'm', encoding: 'utf8' }),
    splitAgain: await call('POST', '/v1/cluster/ranges/split', { key: 'm', encoding: 'utf8' }),
    splitEmpty: await call('POST', '/v1/cluster/ranges/split', { key: '', encoding: 'utf8' }),
    statusSplit: await call('GET', '/v1/cluster/status'),
  };
}

const recorders = {
  keys: recordKeys,
  actions: recordActions,
  load: recordLoad,
  k6: recordK6,
  scan: recordScan,
  watch: recordWatch,
  leases: recordLeases,
  txn: recordTxn,
  auth: recordAuth,
  'run-events': recordRunEvents,
  cluster: recordCluster,
  ranges: recordRanges,
};

mkdirSync(out, { recursive: true });
for (const [name, record] of Object.entries(recorders)) {
  if (only && !only.includes(name)) continue;
  const payloads = await record();
  // One answer a line: readable diffs without the bulk of indenting every stats payload.
  const lines = Object.entries(payloads).map(([key, answer]) => `  ${JSON.stringify(key)}: ${JSON.stringify(answer)}`);
  writeFileSync(join(out, `${name}.json`), `{\n${lines.join(',\n')}\n}\n`);
  console.log(`recorded ${Object.keys(payloads).length} answers into src/test/recorded/${name}.json`);
}
