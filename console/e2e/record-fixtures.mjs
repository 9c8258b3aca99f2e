// Records what a real cluster sends over GET /v1/cluster/events into the fixtures the
// component tests replay (src/test/recorded/*.json), around two scenarios:
//   storage:  writes until the nodes flush, then POST /v1/cluster/compact;
//   failover: kill -9 of the leader, and the election after it;
//   incident: the same under a steady write load, so the gateway answers some 503s and
//             504s (the nodes need --gateway-admin, which strata-cluster gives them);
//   membership: a settled cluster under a light write load, a leadership transfer, a
//             follower removed, added back (a learner) and promoted again: what the
//             Cluster view draws (every kind of frame, roles, replication, the canary).
// SCENARIOS (comma-separated) picks some; all but membership by default (it is recorded
// alone, on a fresh cluster: SCENARIOS=membership). The killed node is not started
// again: restart it (strata-cluster start-node) before recording again.
// Each file holds the frames in arrival order: [{ event, receivedAtMs, data }].
//
// Env: STRATA_URL (the gateway), STRATA_RUN_DIR (the cluster's run directory, whose
// pids/node<id>.pid files name the nodes and whose admin.token the compaction carries),
// OUT (default src/test/recorded).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const base = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';
const runDir = process.env.STRATA_RUN_DIR;
const out = process.env.OUT ?? 'src/test/recorded';
if (!runDir) throw new Error('STRATA_RUN_DIR is required');
// The compaction needs admin: the token `strata-cluster up` wrote into the run directory.
const adminToken = readFileSync(join(runDir, 'admin.token'), 'utf8').trim();

/**
 * Follows the event stream until `stop` resolves, opening it again when it ends (the
 * node it came from may be the one killed), as the console does; returns every frame.
 */
async function record(stop) {
  const frames = [];
  let stopped = false;
  let controller = new AbortController();
  const follow = async () => {
    const response = await fetch(`${base}/v1/cluster/events`, { signal: controller.signal });
    if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
        }
        if (data.length > 0) frames.push({ event, receivedAtMs: Date.now(), data: JSON.parse(data.join('\n')) });
      }
    }
  };
  const pump = (async () => {
    while (!stopped) {
      await follow().catch(() => undefined);
      if (!stopped) await sleep(100);
    }
  })();
  await stop(frames);
  stopped = true;
  controller.abort();
  controller = new AbortController();
  await pump;
  return frames;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function put(i) {
  const response = await fetch(`${base}/v1/kv/fixture-${String(i).padStart(5, '0')}`, {
    method: 'PUT',
    body: 'v'.repeat(200),
  });
  return response.status;
}

async function clusterStatus() {
  return (await fetch(`${base}/v1/cluster/status`)).json();
}

async function leaderId() {
  return (await clusterStatus()).leader_id;
}

/** An admin request; answers the status and the body. */
async function admin(method, path, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  console.log(`record: ${method} ${path} ${response.status} ${text.slice(0, 160)}`);
  return { status: response.status, text };
}

function save(name, frames) {
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, `${name}.json`), JSON.stringify(frames) + '\n');
  const counts = {};
  for (const f of frames) counts[f.event] = (counts[f.event] ?? 0) + 1;
  console.log(`record: ${name}.json ${JSON.stringify(counts)}`);
}

const scenarios = (process.env.SCENARIOS ?? 'storage,failover,incident').split(',');

if (scenarios.includes('storage')) save(
  'storage',
  await record(async () => {
    await sleep(1500);
    for (let i = 0; i < 400; i += 8) {
      await Promise.all(Array.from({ length: 8 }, (_, k) => put(i + k)));
    }
    const compacted = await fetch(`${base}/v1/cluster/compact`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
      body: '{}',
    });
    console.log(`record: compact ${compacted.status} ${await compacted.text()}`);
    await sleep(2500);
  }),
);

/** Kills the leader, waits for another, and records 3 s more. */
async function failover(frames) {
  await sleep(2500);
  const leader = await leaderId();
  const pid = Number(readFileSync(join(runDir, 'pids', `node${leader}.pid`), 'utf8'));
  process.kill(pid, 'SIGKILL');
  console.log(`record: killed node ${leader}`);
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    const elected = frames.some((f) => f.event === 'status' && f.data.leader_id !== 0 && f.data.leader_id !== leader);
    if (elected) break;
    await sleep(100);
  }
  await sleep(3000);
}

if (scenarios.includes('failover')) save('failover', await record(failover));

/**
 * A settled cluster, a leadership transfer, then a follower removed, added back (a
 * learner until promoted) and promoted, with a write every 100 ms throughout.
 */
async function membership(frames) {
  let writing = true;
  let n = 0;
  const load = (async () => {
    while (writing) {
      await put(200000 + (n++ % 50)).catch(() => 0);
      await sleep(100);
    }
  })();
  await sleep(3000);
  const before = await clusterStatus();
  const leader = before.leader_id;
  const voters = before.nodes.filter((node) => node.id !== leader).map((node) => node.id);
  const [target, leaving] = voters;
  await admin('POST', '/v1/cluster/leader', { target_id: target });
  const moved = Date.now() + 10000;
  while (Date.now() < moved && !frames.some((f) => f.event === 'status' && f.data.leader_id === target)) await sleep(100);
  await sleep(2000);
  const address = before.nodes.find((node) => node.id === leaving).address;
  await admin('DELETE', `/v1/cluster/members/${leaving}`);
  await sleep(2500);
  await admin('POST', '/v1/cluster/members', { id: leaving, address });
  const learner = Date.now() + 10000;
  while (
    Date.now() < learner &&
    !frames.some((f) => f.event === 'status' && f.data.nodes.some((node) => node.id === leaving && node.role === 'learner'))
  ) {
    await sleep(100);
  }
  await sleep(2500);
  for (let i = 0; i < 20; i++) {
    if ((await admin('POST', `/v1/cluster/members/${leaving}/promote`)).status === 200) break;
    await sleep(500);
  }
  await sleep(3000);
  writing = false;
  await load;
}

if (scenarios.includes('membership')) save('membership', await record(membership));

if (scenarios.includes('incident')) {
  save(
    'incident',
    await record(async (frames) => {
      let writing = true;
      let n = 0;
      const load = Promise.all(
        Array.from({ length: 6 }, async () => {
          while (writing) await put(100000 + n++).catch(() => 0);
        }),
      );
      await failover(frames);
      writing = false;
      await load;
    }),
  );
}
