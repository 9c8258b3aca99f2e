// POST /v1/txn: the transaction form's rows become the contract's request, and the
// answer's byte strings become bytes, shown the way the value viewer shows a value.
import { sendJson } from '../../../api/send';
import { bytesFromBase64, bytesFromText } from './bytes';
import type {
  Encoding,
  TxnCompare,
  TxnCompareOp,
  TxnKeyValue,
  TxnOp,
  TxnOpKind,
  TxnRangeOp,
  TxnRequest,
  TxnResult,
} from './types';

/** What a compare tests of its key: exactly one of these per compare. */
export type CompareTarget = 'value' | 'exists' | 'create_index' | 'mod_index' | 'lease';

export const COMPARE_TARGETS: readonly CompareTarget[] = ['value', 'exists', 'create_index', 'mod_index', 'lease'];
export const COMPARE_OPS: readonly TxnCompareOp[] = ['equal', 'not_equal', 'less', 'greater'];
export const OP_KINDS: readonly TxnOpKind[] = ['put', 'delete', 'get', 'range'];

export const TARGET_LABEL: Record<CompareTarget, string> = {
  value: 'value',
  exists: 'exists',
  create_index: 'create index',
  mod_index: 'mod index',
  lease: 'lease',
};

export const OP_LABEL: Record<TxnCompareOp, string> = {
  equal: '=',
  not_equal: '≠',
  less: '<',
  greater: '>',
};

/** One compare row as typed: `key`'s `target` `op` `operand`. */
export interface CompareRow {
  /** Identifies the row while rows are added and removed. */
  id: number;
  key: string;
  target: CompareTarget;
  op: TxnCompareOp;
  /** The value (text), `true`/`false` for exists, or a whole number for the others. */
  operand: string;
}

/** One operation row as typed. A range reads `[key, end)`; `key` empty: from the first key. */
export interface OpRow {
  id: number;
  kind: TxnOpKind;
  key: string;
  /** put: the value (text). */
  value: string;
  /** put: a lease id, or empty for none. */
  lease: string;
  /** range: the exclusive end, empty for the end of the key space. */
  end: string;
  /** range: at most this many pairs, empty for the API's most (1000). */
  limit: string;
}

export interface TxnDraft {
  compare: CompareRow[];
  success: OpRow[];
  failure: OpRow[];
}

export type BuiltTxn = { ok: true; request: TxnRequest } | { ok: false; problem: string };

const WHOLE = /^\d+$/;

class DraftProblem extends Error {}

function whole(text: string, what: string): number {
  const trimmed = text.trim();
  if (!WHOLE.test(trimmed)) throw new DraftProblem(`${what} must be a whole number (got “${text}”)`);
  return Number(trimmed);
}

function compareOf(row: CompareRow, n: number): TxnCompare {
  const base = { key: row.key, op: row.op };
  const where = `Compare ${n}: the ${TARGET_LABEL[row.target]}`;
  switch (row.target) {
    case 'value':
      return { ...base, value: row.operand };
    case 'exists':
      return { ...base, exists: row.operand === 'true' };
    case 'create_index':
      return { ...base, create_index: whole(row.operand, where) };
    case 'mod_index':
      return { ...base, mod_index: whole(row.operand, where) };
    case 'lease':
      return { ...base, lease: whole(row.operand, where) };
  }
}

function opOf(row: OpRow, where: string): TxnOp {
  switch (row.kind) {
    case 'put':
      return row.lease.trim() === ''
        ? { op: 'put', key: row.key, value: row.value }
        : { op: 'put', key: row.key, value: row.value, lease: whole(row.lease, `${where}: the lease`) };
    case 'delete':
      return { op: 'delete', key: row.key };
    case 'get':
      return { op: 'get', key: row.key };
    case 'range': {
      const range: TxnRangeOp = { op: 'range' };
      if (row.key !== '') range.start = row.key;
      if (row.end !== '') range.end = row.end;
      if (row.limit.trim() !== '') range.limit = whole(row.limit, `${where}: the limit`);
      return range;
    }
  }
}

/**
 * The request the form's rows describe, keys and values sent as the UTF-8 text typed.
 * Only what the contract cannot carry (a number field that is not a number) is refused
 * here; everything else, an empty key included, is left for the API to judge, so the
 * operator sees its own words for what is wrong.
 */
export function txnRequestOf(draft: TxnDraft): BuiltTxn {
  try {
    return {
      ok: true,
      request: {
        compare: draft.compare.map((row, i) => compareOf(row, i + 1)),
        success: draft.success.map((row, i) => opOf(row, `Success op ${i + 1}`)),
        failure: draft.failure.map((row, i) => opOf(row, `Failure op ${i + 1}`)),
        encoding: 'utf8',
      },
    };
  } catch (e) {
    if (e instanceof DraftProblem) return { ok: false, problem: e.message };
    throw e;
  }
}

export interface KeyValueBytes {
  key: Uint8Array;
  value: Uint8Array;
  createIndex: number;
  modIndex: number;
  /** 0: none. */
  lease: number;
}

/** One operation's result, its byte strings decoded. */
export type OpOutcome =
  | { op: 'put' }
  | { op: 'delete'; deleted: boolean }
  | { op: 'get'; kv: KeyValueBytes | null }
  | { op: 'range'; kvs: KeyValueBytes[]; more: boolean };

export interface TxnOutcome {
  /** Every compare held and the success branch ran; else the failure branch did. */
  succeeded: boolean;
  results: OpOutcome[];
  index: number;
  nodeId: number;
}

function decode(text: string, encoding: Encoding): Uint8Array {
  return encoding === 'base64' ? bytesFromBase64(text) : bytesFromText(text);
}

function pairOf(kv: TxnKeyValue, encoding: Encoding): KeyValueBytes {
  return {
    key: decode(kv.key, encoding),
    value: decode(kv.value, encoding),
    createIndex: kv.create_index,
    modIndex: kv.mod_index,
    lease: kv.lease,
  };
}

/** The answer with its byte strings as bytes (the API answers base64 when one is not UTF-8). */
export function outcomeOf(result: TxnResult): TxnOutcome {
  return {
    succeeded: result.succeeded,
    index: result.index,
    nodeId: result.node_id,
    results: result.results.map((r): OpOutcome => {
      switch (r.op) {
        case 'put':
          return { op: 'put' };
        case 'delete':
          return { op: 'delete', deleted: r.deleted ?? false };
        case 'get':
          return { op: 'get', kv: r.kv ? pairOf(r.kv, result.encoding) : null };
        case 'range':
          return { op: 'range', kvs: (r.kvs ?? []).map((kv) => pairOf(kv, result.encoding)), more: r.more ?? false };
      }
    }),
  };
}

export async function runTxn(request: TxnRequest): Promise<TxnOutcome> {
  return outcomeOf(await sendJson<TxnResult>('POST', '/v1/txn', request));
}

let lastRowId = 0;

/** A compare row with a fresh id; the operand starts as what the target takes. */
export function newCompareRow(fields: Partial<Omit<CompareRow, 'id'>> = {}): CompareRow {
  lastRowId += 1;
  return { id: lastRowId, key: '', target: 'value', op: 'equal', operand: '', ...fields };
}

export function newOpRow(fields: Partial<Omit<OpRow, 'id'>> = {}): OpRow {
  lastRowId += 1;
  return { id: lastRowId, kind: 'put', key: '', value: '', lease: '', end: '', limit: '', ...fields };
}

/** The key a transaction form starts from: its text, its mod index, its value when it is text. */
export interface CasSeed {
  key: string;
  modIndex: number;
  value: string | null;
}

/**
 * Compare-and-swap on a key's mod index: put a new value only if no write came after
 * the one that was read, else read what is there now (optimistic concurrency).
 */
export function casDraft(seed: CasSeed): TxnDraft {
  return {
    compare: [newCompareRow({ key: seed.key, target: 'mod_index', op: 'equal', operand: String(seed.modIndex) })],
    success: [newOpRow({ kind: 'put', key: seed.key, value: seed.value ?? '' })],
    failure: [newOpRow({ kind: 'get', key: seed.key })],
  };
}
