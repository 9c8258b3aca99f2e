import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import keys from '../../../test/recorded/keys.json';
import recorded from '../../../test/recorded/txn.json';
import { serveRecorded, type Route } from '../../../test/recordedApi';
import { renderWithQuery } from '../../../test/render';
import { KeysPage } from './KeysPage';
import { TxnForm } from './TxnForm';

// Every answer below was recorded from a real cluster by scripts/record-payloads.mjs,
// which sent the very bodies the forms here are filled to send.

beforeEach(() => {
  MockEventSource.reset();
});

function form() {
  return screen.getByTestId('txn-form');
}

function type(name: string, value: string) {
  fireEvent.change(within(form()).getByRole('textbox', { name }), { target: { value } });
}

function choose(name: string, value: string) {
  fireEvent.change(within(form()).getByRole('combobox', { name }), { target: { value } });
}

function click(name: string) {
  fireEvent.click(within(form()).getByRole('button', { name }));
}

function addCompare(n: number, key: string, target: string, op: string, operand: string) {
  click('+ Add compare');
  type(`Compare ${n} key`, key);
  choose(`Compare ${n} target`, target);
  choose(`Compare ${n} op`, op);
  if (target === 'exists') choose(`Compare ${n} operand`, operand);
  else type(`Compare ${n} operand`, operand);
}

interface OpFields {
  key?: string;
  value?: string;
  lease?: string;
  end?: string;
  limit?: string;
}

/** The i-th of `elements`, which the test expects to be there. */
function nth(elements: HTMLElement[], i: number): HTMLElement {
  const element = elements[i];
  if (!element) throw new Error(`no element ${i} of ${elements.length}`);
  return element;
}

function addOp(branch: 'success' | 'failure', n: number, kind: string, fields: OpFields) {
  const label = `${branch === 'success' ? 'Success' : 'Failure'} op ${n}`;
  click(`+ Add ${branch} op`);
  choose(`${label} kind`, kind);
  if (fields.key !== undefined) type(`${label} ${kind === 'range' ? 'start' : 'key'}`, fields.key);
  if (fields.value !== undefined) type(`${label} value`, fields.value);
  if (fields.lease !== undefined) type(`${label} lease`, fields.lease);
  if (fields.end !== undefined) type(`${label} end`, fields.end);
  if (fields.limit !== undefined) type(`${label} limit`, fields.limit);
}

/** A key-value pair as a recorded transaction result holds it. */
interface RecordedKv {
  create_index: number;
  mod_index: number;
  lease: number;
}

const txnRoute = (answer: Route['answer']): Route => ({ method: 'POST', url: '/v1/txn', answer });

describe('TxnForm', () => {
  it('sends every compare target and op kind the rows say, and shows each result of the success branch', async () => {
    // Proves the form → request mapping through the UI (the body matches what the
    // recorder sent) and the rendering of put, delete (existing or not), get (found,
    // pretty JSON; not found) and range (pairs, "more") results.
    const { create_index: created, mod_index: modified } = recorded.getBefore.body;
    const results = recorded.succeeded.body.results as { kv?: RecordedKv; kvs?: RecordedKv[] }[];
    const gotB = results[3]?.kv;
    const rangeA = results[5]?.kvs?.[0];
    const api = serveRecorded([txnRoute(recorded.succeeded)]);
    renderWithQuery(<TxnForm onRan={() => undefined} />);
    addCompare(1, 'txn/acct/a', 'value', 'equal', '5');
    addCompare(2, 'txn/acct/b', 'exists', 'equal', 'true');
    addCompare(3, 'txn/acct/a', 'create_index', 'greater', String(created - 1));
    addCompare(4, 'txn/acct/a', 'mod_index', 'equal', String(modified));
    addCompare(5, 'txn/acct/a', 'lease', 'equal', '0');
    addCompare(6, 'txn/acct/b', 'value', 'less', '{"c');
    addCompare(7, 'txn/none', 'exists', 'not_equal', 'true');
    addOp('success', 1, 'put', { key: 'txn/acct/a', value: '6', lease: String(recorded.lease.body.id) });
    addOp('success', 2, 'delete', { key: 'txn/old' });
    addOp('success', 3, 'delete', { key: 'txn/none' });
    addOp('success', 4, 'get', { key: 'txn/acct/b' });
    addOp('success', 5, 'get', { key: 'txn/none' });
    addOp('success', 6, 'range', { key: 'txn/acct/', end: 'txn/acct0', limit: '10' });
    addOp('success', 7, 'range', { key: 'txn/', end: 'txn0', limit: '1' });
    addOp('failure', 1, 'get', { key: 'txn/acct/a' });
    click('Run transaction');

    const result = await screen.findByTestId('txn-result');
    expect(api.requests('POST', '/v1/txn')[0]?.body).toEqual({
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
        { op: 'put', key: 'txn/acct/a', value: '6', lease: recorded.lease.body.id },
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
    expect(result).toHaveAttribute('data-succeeded', 'true');
    expect(within(result).getByTestId('txn-branch')).toHaveTextContent('success branch ran');
    expect(result).toHaveTextContent(`every compare held, decided at index ${recorded.succeeded.body.index}`);
    const rows = within(result).getAllByTestId('txn-op-result');
    expect(rows.map((r) => r.getAttribute('data-op'))).toEqual(['put', 'delete', 'delete', 'get', 'get', 'range', 'range']);
    expect(rows[0]).toHaveTextContent(`puttxn/acct/astored, under lease ${recorded.lease.body.id}`);
    expect(rows[1]).toHaveTextContent('deletetxn/olddeleted');
    expect(rows[2]).toHaveTextContent('deletetxn/nonenot there: nothing deleted');
    const got = within(nth(rows, 3)).getByTestId('txn-value');
    expect(got).toHaveAttribute('data-kind', 'json');
    expect(got.textContent).toBe('{\n  "balance": 9,\n  "owner": "bob"\n}');
    expect(rows[3]).toHaveTextContent(`created at index ${gotB?.create_index}, last put at index ${gotB?.mod_index}`);
    expect(within(nth(rows, 4)).getByTestId('txn-not-found')).toHaveTextContent('not found');
    expect(within(nth(rows, 5)).getByTestId('txn-range-count')).toHaveTextContent('2 pairs');
    const pairs = within(nth(rows, 5)).getAllByTestId('txn-pair');
    expect(rangeA?.lease).toBe(recorded.lease.body.id);
    expect(pairs[0]).toHaveTextContent(
      `txn/acct/acreated at index ${rangeA?.create_index}, last put at index ${rangeA?.mod_index}, under lease ${recorded.lease.body.id}`,
    );
    expect(within(nth(pairs, 0)).getByTestId('txn-value')).toHaveAttribute('data-kind', 'text');
    expect(within(nth(pairs, 1)).getByTestId('txn-value')).toHaveAttribute('data-kind', 'json');
    expect(within(nth(rows, 6)).getByTestId('txn-range-count')).toHaveTextContent('1 pair, more beyond the limit');
  });

  it('says when the failure branch ran and shows its results', async () => {
    const api = serveRecorded([txnRoute(recorded.failed)]);
    renderWithQuery(<TxnForm onRan={() => undefined} />);
    addCompare(1, 'txn/acct/a', 'mod_index', 'equal', String(recorded.getBefore.body.mod_index));
    addOp('success', 1, 'put', { key: 'txn/acct/a', value: '7' });
    addOp('failure', 1, 'get', { key: 'txn/acct/a' });
    addOp('failure', 2, 'range', { key: 'txn/acct/', end: 'txn/acct0' });
    click('Run transaction');
    const result = await screen.findByTestId('txn-result');
    expect(api.requests('POST')[0]?.body).toEqual({
      compare: [{ key: 'txn/acct/a', op: 'equal', mod_index: recorded.getBefore.body.mod_index }],
      success: [{ op: 'put', key: 'txn/acct/a', value: '7' }],
      failure: [
        { op: 'get', key: 'txn/acct/a' },
        { op: 'range', start: 'txn/acct/', end: 'txn/acct0' },
      ],
      encoding: 'utf8',
    });
    expect(result).toHaveAttribute('data-succeeded', 'false');
    expect(within(result).getByTestId('txn-branch')).toHaveTextContent('failure branch ran');
    expect(result).toHaveTextContent('a compare did not hold');
    const rows = within(result).getAllByTestId('txn-op-result');
    expect(rows.map((r) => r.getAttribute('data-op'))).toEqual(['get', 'range']);
    expect(rows[0]).toHaveTextContent('gettxn/acct/a');
    expect(within(nth(rows, 0)).getByTestId('txn-value')).toHaveTextContent('6');
    expect(within(nth(rows, 1)).getByTestId('txn-range-count')).toHaveTextContent('2 pairs');
  });

  it('shows a value that is not UTF-8 as a hex dump', async () => {
    serveRecorded([txnRoute(recorded.binary)]);
    renderWithQuery(<TxnForm onRan={() => undefined} />);
    addOp('success', 1, 'get', { key: 'txn/blob' });
    click('Run transaction');
    const value = await screen.findByTestId('txn-value');
    expect(value).toHaveAttribute('data-kind', 'binary');
    expect(value.textContent).toBe(`00000000  00 01 02 ff fe 20 62 69 6e${' '.repeat(21)}  ..... bin`);
  });

  it('shows the API’s error as given, and sends nothing for a lease that is not a number', async () => {
    const api = serveRecorded([txnRoute(recorded.unknownLease)]);
    renderWithQuery(<TxnForm onRan={() => undefined} />);
    addOp('success', 1, 'put', { key: 'txn/acct/a', value: '8', lease: 'soon' });
    click('Run transaction');
    expect(screen.getByTestId('txn-problem')).toHaveTextContent('Success op 1: the lease must be a whole number (got “soon”)');
    expect(api.requests('POST')).toHaveLength(0);

    type('Success op 1 lease', '999999');
    click('Run transaction');
    const error = await within(form()).findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'NOT_FOUND');
    expect(error).toHaveTextContent('HTTP 404');
    expect(error).toHaveTextContent(recorded.unknownLease.body.message);
    expect(screen.queryByTestId('txn-problem')).not.toBeInTheDocument();
    expect(screen.queryByTestId('txn-result')).not.toBeInTheDocument();
  });

  it('offers only equal and not equal for exists, and removes rows', () => {
    serveRecorded([]);
    renderWithQuery(<TxnForm onRan={() => undefined} />);
    addCompare(1, 'k', 'exists', 'not_equal', 'false');
    const ops = within(within(form()).getByRole('combobox', { name: 'Compare 1 op' })).getAllByRole('option');
    expect(ops.map((o) => o.getAttribute('value'))).toEqual(['equal', 'not_equal']);
    click('Remove compare 1');
    expect(within(form()).queryAllByTestId('compare-row')).toHaveLength(0);
  });

  it('fills a compare-and-swap on the mod index of the key being viewed', async () => {
    // Proves the prefill from the value viewer: compare the recorded mod index, put the
    // value read (to be edited), and read the key in the failure branch.
    // jsdom lays nothing out, so it has no scrollIntoView; the page scrolls to the form.
    Element.prototype.scrollIntoView = vi.fn();
    const b64 = (s: string) => encodeURIComponent(btoa(s));
    const api = serveRecorded([
      { method: 'GET', url: `/v1/kv?keys_only=true&encoding=base64&limit=25&prefix=${b64('users/')}`, answer: keys.scanUsers },
      { method: 'GET', url: '/v1/kv/users%2Fbob?', answer: keys.getText },
      txnRoute(recorded.failed),
    ]);
    renderWithQuery(<KeysPage />);
    fireEvent.change(screen.getByRole('textbox', { name: 'Prefix' }), { target: { value: 'users/' } });
    fireEvent.click(screen.getByRole('button', { name: 'Browse' }));
    fireEvent.click(await screen.findByRole('button', { name: 'users/bob' }));
    fireEvent.click(await screen.findByTestId('start-cas-txn'));
    expect(within(form()).getByRole('textbox', { name: 'Compare 1 operand' })).toHaveValue(String(keys.getText.body.mod_index));
    type('Success op 1 value', 'new text for bob');
    click('Run transaction');
    await waitFor(() => {
      expect(api.requests('POST', '/v1/txn')).toHaveLength(1);
    });
    expect(api.requests('POST', '/v1/txn')[0]?.body).toEqual({
      compare: [{ key: 'users/bob', op: 'equal', mod_index: keys.getText.body.mod_index }],
      success: [{ op: 'put', key: 'users/bob', value: 'new text for bob' }],
      failure: [{ op: 'get', key: 'users/bob' }],
      encoding: 'utf8',
    });
    expect(await screen.findByTestId('txn-result')).toHaveAttribute('data-succeeded', 'false');
  });
});
