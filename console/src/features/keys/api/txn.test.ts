import recorded from '../../../test/recorded/txn.json';
import { hexDump } from './bytes';
import { casDraft, newCompareRow, newOpRow, outcomeOf, txnRequestOf, type TxnDraft } from './txn';
import type { TxnResult } from './types';

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe('txnRequestOf', () => {
  it('maps every compare target and every op kind to the contract’s request', () => {
    // Proves the rows become the body the cluster answered with recorded.succeeded
    // (scripts/record-payloads.mjs sends the same body): one target per compare, the
    // numbers as numbers, a put's lease only when given, a range's bounds only when typed.
    const draft: TxnDraft = {
      compare: [
        newCompareRow({ key: 'txn/acct/a', target: 'value', op: 'equal', operand: '5' }),
        newCompareRow({ key: 'txn/acct/b', target: 'exists', op: 'equal', operand: 'true' }),
        newCompareRow({ key: 'txn/acct/a', target: 'create_index', op: 'greater', operand: '20' }),
        newCompareRow({ key: 'txn/acct/a', target: 'mod_index', op: 'equal', operand: ' 21 ' }),
        newCompareRow({ key: 'txn/acct/a', target: 'lease', op: 'equal', operand: '0' }),
        newCompareRow({ key: 'txn/acct/b', target: 'value', op: 'less', operand: '{"c' }),
        newCompareRow({ key: 'txn/none', target: 'exists', op: 'not_equal', operand: 'true' }),
      ],
      success: [
        newOpRow({ kind: 'put', key: 'txn/acct/a', value: '6', lease: '25' }),
        newOpRow({ kind: 'delete', key: 'txn/old', value: 'ignored' }),
        newOpRow({ kind: 'delete', key: 'txn/none' }),
        newOpRow({ kind: 'get', key: 'txn/acct/b' }),
        newOpRow({ kind: 'get', key: 'txn/none' }),
        newOpRow({ kind: 'range', key: 'txn/acct/', end: 'txn/acct0', limit: '10' }),
        newOpRow({ kind: 'range', key: 'txn/', end: 'txn0', limit: '1' }),
      ],
      failure: [newOpRow({ kind: 'get', key: 'txn/acct/a' })],
    };
    expect(txnRequestOf(draft)).toEqual({
      ok: true,
      request: {
        compare: [
          { key: 'txn/acct/a', op: 'equal', value: '5' },
          { key: 'txn/acct/b', op: 'equal', exists: true },
          { key: 'txn/acct/a', op: 'greater', create_index: 20 },
          { key: 'txn/acct/a', op: 'equal', mod_index: 21 },
          { key: 'txn/acct/a', op: 'equal', lease: 0 },
          { key: 'txn/acct/b', op: 'less', value: '{"c' },
          { key: 'txn/none', op: 'not_equal', exists: true },
        ],
        success: [
          { op: 'put', key: 'txn/acct/a', value: '6', lease: 25 },
          { op: 'delete', key: 'txn/old' },
          { op: 'delete', key: 'txn/none' },
          { op: 'get', key: 'txn/acct/b' },
          { op: 'get', key: 'txn/none' },
          { op: 'range', start: 'txn/acct/', end: 'txn/acct0', limit: 10 },
          { op: 'range', start: 'txn/', end: 'txn0', limit: 1 },
        ],
        failure: [{ op: 'get', key: 'txn/acct/a' }],
        encoding: 'utf8',
      },
    });
  });

  it('sends exists false, an empty value, a put without lease and an open range as such', () => {
    const built = txnRequestOf({
      compare: [newCompareRow({ key: 'k', target: 'exists', op: 'not_equal', operand: 'false' })],
      success: [newOpRow({ kind: 'put', key: 'k', value: '' }), newOpRow({ kind: 'range' })],
      failure: [],
    });
    expect(built).toEqual({
      ok: true,
      request: {
        compare: [{ key: 'k', op: 'not_equal', exists: false }],
        success: [{ op: 'put', key: 'k', value: '' }, { op: 'range' }],
        failure: [],
        encoding: 'utf8',
      },
    });
  });

  it('refuses a number field that is not a whole number, naming the row', () => {
    // Proves nothing the contract cannot carry is sent: the operator is told which row.
    expect(txnRequestOf({ compare: [newCompareRow({ key: 'k', target: 'mod_index', operand: '' })], success: [], failure: [] })).toEqual({
      ok: false,
      problem: 'Compare 1: the mod index must be a whole number (got “”)',
    });
    expect(
      txnRequestOf({ compare: [], success: [], failure: [newOpRow({ kind: 'get' }), newOpRow({ kind: 'put', lease: 'abc' })] }),
    ).toEqual({ ok: false, problem: 'Failure op 2: the lease must be a whole number (got “abc”)' });
    expect(txnRequestOf({ compare: [], success: [newOpRow({ kind: 'range', limit: '-1' })], failure: [] })).toEqual({
      ok: false,
      problem: 'Success op 1: the limit must be a whole number (got “-1”)',
    });
  });

  it('prefills a compare-and-swap on a key’s mod index', () => {
    const built = txnRequestOf(casDraft({ key: 'users/bob', modIndex: 9, value: 'plain text for bob' }));
    expect(built).toEqual({
      ok: true,
      request: {
        compare: [{ key: 'users/bob', op: 'equal', mod_index: 9 }],
        success: [{ op: 'put', key: 'users/bob', value: 'plain text for bob' }],
        failure: [{ op: 'get', key: 'users/bob' }],
        encoding: 'utf8',
      },
    });
  });
});

describe('outcomeOf', () => {
  it('decodes every kind of result of a recorded transaction', () => {
    const outcome = outcomeOf(recorded.succeeded.body as TxnResult);
    expect(outcome.succeeded).toBe(true);
    expect(outcome.index).toBe(recorded.succeeded.body.index);
    expect(outcome.results.map((r) => r.op)).toEqual(['put', 'delete', 'delete', 'get', 'get', 'range', 'range']);
    expect(outcome.results[1]).toEqual({ op: 'delete', deleted: true });
    expect(outcome.results[2]).toEqual({ op: 'delete', deleted: false });
    const got = outcome.results[3];
    expect(got?.op === 'get' && got.kv && text(got.kv.value)).toBe('{"balance":9,"owner":"bob"}');
    expect(outcome.results[4]).toEqual({ op: 'get', kv: null });
    const range = outcome.results[6];
    expect(range?.op === 'range' && [range.kvs.map((kv) => text(kv.key)), range.more]).toEqual([['txn/acct/a'], true]);
    expect(range?.op === 'range' && range.kvs[0]?.lease).toBe(recorded.lease.body.id);
  });

  it('decodes base64 when the cluster answered in it (a value that is not UTF-8)', () => {
    const outcome = outcomeOf(recorded.binary.body as TxnResult);
    const got = outcome.results[0];
    expect(got?.op === 'get' && got.kv && [text(got.kv.key), hexDump(got.kv.value)]).toEqual([
      'txn/blob',
      hexDump(new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x20, 0x62, 0x69, 0x6e])),
    ]);
  });
});
