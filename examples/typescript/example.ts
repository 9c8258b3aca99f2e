// Strata from TypeScript with fetch (REST through the gateway), typed by the OpenAPI
// document (`schema.d.ts`, generated from proto/openapi.json by openapi-typescript): a
// write with a request id sent twice and applied once, a read, a compare-and-swap, an
// update in a transaction guarded by the key's mod index (sent again when stale, it takes
// its failure branch), a watch of the prefix from the first write's raft index that must
// replay these changes, and a key under a lease that goes when the lease is revoked.
//
//   npm run --prefix examples/typescript start   (STRATA_URL, default http://127.0.0.1:8080)
import type { components } from './schema';

type WriteResult = components['schemas']['WriteResult'];
type CasResult = components['schemas']['CasResult'];
type WatchChanges = components['schemas']['WatchChanges'];
type WatchProgress = components['schemas']['WatchProgress'];
type GetResult = components['schemas']['GetResult'];
type TxnRequest = components['schemas']['TxnRequest'];
type TxnResult = components['schemas']['TxnResult'];
type LeaseResult = components['schemas']['LeaseResult'];
type RevokeResult = components['schemas']['RevokeResult'];

const json = { 'content-type': 'application/json' };

/** Puts `value` under `key` only if nobody wrote `key` since `modIndex`, else reads it. */
function updateIfUnchanged(key: string, modIndex: number, value: string): Promise<TxnResult> {
  const txn: TxnRequest = {
    compare: [{ key, mod_index: modIndex }],
    success: [{ op: 'put', key, value }],
    failure: [{ op: 'get', key }],
  };
  return call<TxnResult>('POST', '/v1/txn', JSON.stringify(txn), json);
}

// Node's own globals, declared here so that the example needs no @types package.
declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

const base = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';

async function call<T>(method: string, path: string, body?: string, headers?: Record<string, string>): Promise<T> {
  const response = await fetch(base + path, { method, body, headers });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

interface Change {
  index: number;
  type: string;
  key: string;
  value?: string;
}

/** The changes under `prefix` from raft index `from`, read until an event reaches `until`. */
async function watch(prefix: string, from: number, until: number): Promise<Change[]> {
  const response = await fetch(`${base}/v1/watch?prefix=${encodeURIComponent(prefix)}&from_index=${from}&progress_ms=200`);
  if (!response.ok || !response.body) throw new Error(`watch: ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const changes: Change[] = [];
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the event stream closed early');
    buffered += value;
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (!event || data === undefined) continue;
      if (event === 'ended') throw new Error(`the watch ended: ${data}`);
      const body = JSON.parse(data) as WatchChanges | WatchProgress;
      if ('changes' in body) {
        for (const c of body.changes) changes.push({ index: body.index, type: c.type, key: c.key, value: c.value });
      }
      if (body.index >= until) {
        await reader.cancel();
        return changes;
      }
    }
  }
}

async function main() {
  const prefix = `ts-example/${Date.now()}/`;
  const key = `${prefix}greeting`;
  const id = { 'x-strata-request-id': `${prefix}req-1` };
  const first = await call<WriteResult>('PUT', `/v1/kv/${key}`, 'hello', id);
  const again = await call<WriteResult>('PUT', `/v1/kv/${key}`, 'hello', id);
  if (again.replayed !== true || again.index !== first.index) throw new Error(`the resend applied again: ${JSON.stringify(again)}`);
  const value = await (await fetch(`${base}/v1/kv/${key}`)).text();
  if (value !== 'hello') throw new Error(`read ${value}`);
  const swap = await call<CasResult>('POST', '/v1/cas', JSON.stringify({ key, expected: 'hello', value: 'hi' }), {
    'content-type': 'application/json',
  });
  if (!swap.succeeded) throw new Error('the swap failed');
  const read = await call<GetResult>('GET', `/v1/kv/${key}`, undefined, { accept: 'application/json' });
  if (read.value !== 'hi' || read.mod_index !== swap.index) throw new Error(`read ${JSON.stringify(read)}`);
  const txn = await updateIfUnchanged(key, read.mod_index, 'hey');
  if (!txn.succeeded) throw new Error(`the transaction did not apply: ${JSON.stringify(txn)}`);
  const stale = await updateIfUnchanged(key, read.mod_index, 'too late');
  if (stale.succeeded || stale.results[0]?.kv?.value !== 'hey') throw new Error(`the stale transaction: ${JSON.stringify(stale)}`);
  const got = await watch(prefix, first.index, txn.index);
  const want: Change[] = [
    { index: first.index, type: 'put', key, value: 'hello' },
    { index: swap.index, type: 'put', key, value: 'hi' },
    { index: txn.index, type: 'put', key, value: 'hey' },
  ];
  if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`watch replayed ${JSON.stringify(got)}`);

  const lease = await call<LeaseResult>('POST', '/v1/leases', JSON.stringify({ ttl: '10s' }), json);
  const leased = `ts-example-leased/${prefix}`;
  await call<WriteResult>('PUT', `/v1/kv/${leased}?lease=${lease.id}`, 'online');
  const revoked = await call<RevokeResult>('DELETE', `/v1/leases/${lease.id}`);
  if (revoked.keys_deleted !== 1) throw new Error(`the revoke deleted ${revoked.keys_deleted} keys`);
  const gone = await fetch(`${base}/v1/kv/${leased}`);
  if (gone.status !== 404) throw new Error(`the key outlived its lease: ${gone.status}`);
  console.log(
    `typescript example: ok (put at ${first.index} once though sent twice, swapped at ${swap.index}, ` +
      `updated in a transaction at ${txn.index}, watch replayed ${got.length} changes, a leased key ended with its lease)`,
  );
}

main().catch((e: unknown) => {
  console.error(`typescript example: FAILED: ${String(e)}`);
  process.exit(1);
});
