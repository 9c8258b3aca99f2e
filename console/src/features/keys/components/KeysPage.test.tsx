import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import recorded from '../../../test/recorded/keys.json';
import auth from '../../../test/recorded/auth.json';
import leases from '../../../test/recorded/leases.json';
import { TOKEN_KEY } from '../../../lib/credential';
import scan from '../../../test/recorded/scan.json';
import watch from '../../../test/recorded/watch.json';
import { parseSse } from '../../../test/sse';
import { serveRecorded, type Route } from '../../../test/recordedApi';
import { renderWithQuery } from '../../../test/render';
import { KeysPage } from './KeysPage';

// Every answer below was recorded from a real cluster by scripts/record-payloads.mjs.
const b64 = (text: string) => encodeURIComponent(btoa(text));

const SCANS: Route[] = [
  { method: 'GET', url: `/v1/kv?keys_only=true&encoding=base64&limit=25&prefix=${b64('users/')}`, answer: recorded.scanUsers },
  { method: 'GET', url: /prefix=cGFnZS8%3D&page_token=/, answer: recorded.scanPage2 },
  { method: 'GET', url: `/v1/kv?keys_only=true&encoding=base64&limit=25&prefix=${b64('page/')}`, answer: recorded.scanPage1 },
  { method: 'GET', url: `/v1/kv?keys_only=true&encoding=base64&limit=25&prefix=${b64('nothing-here/')}`, answer: recorded.scanEmpty },
];
const READS: Route[] = [
  { method: 'GET', url: '/v1/kv/users%2Falice?', answer: recorded.getJson },
  { method: 'GET', url: '/v1/kv/users%2Fbob?', answer: recorded.getText },
  { method: 'GET', url: '/v1/kv/blobs%2Fraw?', answer: recorded.getBinary },
];

function browse(prefix: string) {
  fireEvent.change(screen.getByRole('textbox', { name: 'Prefix' }), { target: { value: prefix } });
  fireEvent.click(screen.getByRole('button', { name: 'Browse' }));
}

async function keyRows() {
  const list = await screen.findByTestId('key-list');
  return within(list).getAllByTestId('key-row').map((row) => row.getAttribute('data-key'));
}

beforeEach(() => {
  MockEventSource.reset();
});

/** The watch streams the page opened for keys under `watch/`, oldest first. */
function watches() {
  return MockEventSource.instances.filter((s) => s.url.startsWith('/v1/watch?') && s.url.includes(`prefix=${b64('watch/')}`));
}

describe('KeysPage', () => {
  it('lists the keys under a prefix and pretty-prints a JSON value', async () => {
    // Proves the scan asks for keys only under the typed prefix, and a JSON value is indented.
    const api = serveRecorded([...SCANS, ...READS]);
    renderWithQuery(<KeysPage />);
    browse('users/');
    await waitFor(async () => {
      expect(await keyRows()).toEqual(['users/alice', 'users/bob']);
    });
    fireEvent.click(screen.getByRole('button', { name: 'users/alice' }));
    const value = await screen.findByTestId('value-text');
    expect(value).toHaveAttribute('data-kind', 'json');
    expect(value.textContent).toBe('{\n  "name": "Alice",\n  "roles": [\n    "admin",\n    "ops"\n  ]\n}');
    expect(screen.getByTestId('value-kind')).toHaveTextContent('JSON');
    expect(screen.getByTestId('value-versions')).toHaveTextContent(
      `created at index ${recorded.getJson.body.create_index}, last put at index ${recorded.getJson.body.mod_index}`,
    );
    expect(api.requests('GET', '/v1/kv/users%2Falice')).toHaveLength(1);
  });

  it('shows a text value as text', async () => {
    serveRecorded([...SCANS, ...READS]);
    renderWithQuery(<KeysPage />);
    browse('users/');
    fireEvent.click(await screen.findByRole('button', { name: 'users/bob' }));
    expect(await screen.findByTestId('value-text')).toHaveTextContent('plain text for bob');
    expect(screen.getByTestId('value-text')).toHaveAttribute('data-kind', 'text');
  });

  it('shows a binary value as a hex dump', async () => {
    const api = serveRecorded([
      { method: 'GET', url: /prefix=YmxvYnMv/, answer: { status: 200, body: { ...recorded.scanUsers.body, kvs: [{ key: btoa('blobs/raw') }] } } },
      ...READS,
    ]);
    renderWithQuery(<KeysPage />);
    browse('blobs/');
    fireEvent.click(await screen.findByRole('button', { name: 'blobs/raw' }));
    const value = await screen.findByTestId('value-text');
    expect(value).toHaveAttribute('data-kind', 'binary');
    expect(value.textContent).toBe(`00000000  00 01 02 ff fe 20 62 69 6e${' '.repeat(21)}  ..... bin`);
    expect(api.sent.length).toBeGreaterThan(0);
  });

  it('pages forward with the API’s token and back again', async () => {
    // Proves pagination sends next_page_token as page_token and keeps the earlier pages.
    const api = serveRecorded(SCANS);
    renderWithQuery(<KeysPage />);
    browse('page/');
    await waitFor(async () => {
      expect(await keyRows()).toHaveLength(25);
    });
    expect(screen.getByTestId('page-number')).toHaveTextContent('page 1');
    fireEvent.click(screen.getByRole('button', { name: 'Next →' }));
    await waitFor(async () => {
      expect(await keyRows()).toEqual(['page/k26', 'page/k27', 'page/k28', 'page/k29', 'page/k30']);
    });
    const token = recorded.scanPage1.body.next_page_token;
    expect(api.requests('GET').at(-1)?.url).toContain(`page_token=${encodeURIComponent(token)}`);
    expect(screen.getByRole('button', { name: 'Next →' })).toBeDisabled();
    fireEvent.click(screen.getByRole('button', { name: '← Previous' }));
    await waitFor(async () => {
      expect((await keyRows())[0]).toBe('page/k01');
    });
  });

  it('after a write, starts the list again from the first page, which shows it', async () => {
    // Proves: every page of one scan shows the state its first page read, so a put made
    // while page 2 is shown takes the list back to page 1 (a new scan) rather than
    // leaving page 2 as it was.
    const api = serveRecorded([
      { method: 'PUT', url: '/v1/kv/page%2Fnew', answer: recorded.putOk },
      ...SCANS,
      { method: 'GET', url: '/v1/kv/page%2Fnew?', answer: recorded.getText },
    ]);
    renderWithQuery(<KeysPage />);
    browse('page/');
    await screen.findByTestId('key-list');
    fireEvent.click(screen.getByRole('button', { name: 'Next →' }));
    await waitFor(() => {
      expect(screen.getByTestId('page-number')).toHaveTextContent('page 2');
    });
    const form = screen.getByTestId('put-form');
    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: 'page/new' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'Value' }), { target: { value: 'v' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Put' }));
    await within(form).findByTestId('put-ok');
    await waitFor(() => {
      expect(screen.getByTestId('page-number')).toHaveTextContent('page 1');
    });
    const firstPage = `/v1/kv?keys_only=true&encoding=base64&limit=25&prefix=${b64('page/')}`;
    await waitFor(() => {
      expect(api.requests('GET', firstPage).length).toBeGreaterThanOrEqual(2);
    });
  });

  it('says when a scan’s state is gone, and starts it again', async () => {
    // Proves the node's 410 PAGE_TOKEN_EXPIRED (recorded from a real cluster: the last
    // page's token read again) is shown as given, with a way back to the first page.
    const api = serveRecorded([
      { method: 'GET', url: /prefix=c2Nhbi8%3D&page_token=/, answer: scan.expired },
      { method: 'GET', url: /prefix=c2Nhbi8%3D$/, answer: scan.first },
    ]);
    renderWithQuery(<KeysPage />);
    browse('scan/');
    await waitFor(async () => {
      expect(await keyRows()).toEqual(['scan/a', 'scan/b']);
    });
    fireEvent.click(screen.getByRole('button', { name: 'Next →' }));
    const error = await screen.findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'PAGE_TOKEN_EXPIRED');
    expect(error).toHaveTextContent('start the scan again');
    fireEvent.click(screen.getByTestId('scan-restart'));
    await waitFor(async () => {
      expect(await keyRows()).toEqual(['scan/a', 'scan/b']);
    });
    expect(screen.getByTestId('page-number')).toHaveTextContent('page 1');
    expect(api.requests('GET', /page_token=/)).toHaveLength(1);
  });

  it('says so when no key has the prefix', async () => {
    serveRecorded(SCANS);
    renderWithQuery(<KeysPage />);
    browse('nothing-here/');
    expect(await screen.findByTestId('keys-empty')).toHaveTextContent('No key starts with “nothing-here/”.');
  });

  it('shows a missing key’s NOT_FOUND as the API gave it', async () => {
    serveRecorded([
      { method: 'GET', url: /prefix=/, answer: { status: 200, body: { ...recorded.scanUsers.body, kvs: [{ key: btoa('no-such-key') }] } } },
      { method: 'GET', url: '/v1/kv/no-such-key?', answer: recorded.getMissing },
    ]);
    renderWithQuery(<KeysPage />);
    browse('no');
    fireEvent.click(await screen.findByRole('button', { name: 'no-such-key' }));
    const error = await screen.findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'NOT_FOUND');
    expect(error).toHaveTextContent('NOT_FOUND');
    expect(error).toHaveTextContent('HTTP 404');
    expect(error).toHaveTextContent(recorded.getMissing.body.message);
  });

  it('puts a value and shows the API’s error for a bad base64 value verbatim', async () => {
    // Proves the form sends the value as typed and leaves validation to the API.
    const api = serveRecorded([
      { method: 'PUT', url: '/v1/kv/users%2Fcarol', answer: () => (api.requests('PUT').length === 1 ? recorded.putBadBase64 : recorded.putOk) },
      ...SCANS,
      { method: 'GET', url: '/v1/kv/users%2Fcarol?', answer: recorded.getText },
    ]);
    renderWithQuery(<KeysPage />);
    const form = screen.getByTestId('put-form');
    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: 'users/carol' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'Value' }), { target: { value: '!!not base64' } });
    fireEvent.change(within(form).getByRole('combobox', { name: 'Value is' }), { target: { value: 'base64' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Put' }));
    const error = await within(form).findByTestId('api-error');
    expect(error).toHaveTextContent(recorded.putBadBase64.body.message);
    expect(error).toHaveAttribute('data-code', 'INVALID_ARGUMENT');
    expect(api.requests('PUT')[0]?.body).toEqual({ value: '!!not base64', encoding: 'base64' });

    fireEvent.change(within(form).getByRole('textbox', { name: 'Value' }), { target: { value: 'carol' } });
    fireEvent.change(within(form).getByRole('combobox', { name: 'Value is' }), { target: { value: 'utf8' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Put' }));
    expect(await within(form).findByTestId('put-ok')).toHaveTextContent(`Stored at index ${recorded.putOk.body.index}`);
    expect(api.requests('PUT')[1]?.body).toEqual({ value: 'carol', encoding: 'utf8' });
    // The stored key is selected and read back.
    expect(await screen.findByTestId('selected-key')).toHaveTextContent('users/carol');
  });

  it('shows a put the node refused for its token (401) as the API gave it, with a hint', async () => {
    // Recorded from a real cluster: a put carrying something that is no Strata token.
    window.localStorage.setItem(TOKEN_KEY, 'abc.def.ghi');
    const api = serveRecorded([{ method: 'PUT', url: '/v1/kv/users%2Fdave', answer: auth.putRefusedToken }]);
    renderWithQuery(<KeysPage />);
    const form = screen.getByTestId('put-form');
    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: 'users/dave' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'Value' }), { target: { value: 'dave' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Put' }));
    const error = await within(form).findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'UNAUTHENTICATED');
    expect(error).toHaveTextContent(`HTTP 401${auth.putRefusedToken.body.message}`);
    expect(within(form).getByTestId('auth-hint')).toHaveTextContent('The token was refused: sign in again');
    expect(api.requests('PUT')[0]?.headers.authorization).toBe('Bearer abc.def.ghi');
  });

  it('puts a key under an existing lease or a lease of its own, and shows an unknown lease’s 404', async () => {
    // Proves the lease choice becomes ?lease=ID or ?ttl=… as typed, the API judging both.
    const api = serveRecorded([
      { method: 'PUT', url: '/v1/kv/lease%2Fc?lease=999999', answer: leases.putUnknownLease },
      { method: 'PUT', url: '/v1/kv/lease%2Fown?ttl=30s', answer: leases.putWithTtl },
      { method: 'GET', url: '/v1/kv/lease%2Fown?', answer: recorded.getText },
    ]);
    renderWithQuery(<KeysPage />);
    const form = screen.getByTestId('put-form');
    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: 'lease/c' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'Value' }), { target: { value: 'x' } });
    fireEvent.change(within(form).getByRole('combobox', { name: 'Lease' }), { target: { value: 'lease' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'Lease id' }), { target: { value: '999999' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Put' }));
    const error = await within(form).findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'NOT_FOUND');
    expect(error).toHaveTextContent(leases.putUnknownLease.body.message);

    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: 'lease/own' } });
    fireEvent.change(within(form).getByRole('combobox', { name: 'Lease' }), { target: { value: 'ttl' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'TTL' }), { target: { value: '30s' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Put' }));
    expect(await within(form).findByTestId('put-ok')).toHaveTextContent(`under lease ${leases.putWithTtl.body.lease}`);
    expect(api.requests('PUT').map((r) => r.url)).toEqual(['/v1/kv/lease%2Fc?lease=999999', '/v1/kv/lease%2Fown?ttl=30s']);
  });

  it('deletes only after confirmation', async () => {
    // Proves no DELETE leaves the browser until the operator confirms, then the viewer closes.
    const api = serveRecorded([
      ...SCANS,
      ...READS,
      { method: 'DELETE', url: '/v1/kv/users%2Fbob', answer: recorded.deleteOk },
    ]);
    renderWithQuery(<KeysPage />);
    browse('users/');
    fireEvent.click(await screen.findByRole('button', { name: 'users/bob' }));
    await screen.findByTestId('value-text');
    fireEvent.click(screen.getByTestId('delete-key'));
    const confirm = screen.getByRole('alertdialog', { name: 'Delete key' });
    expect(confirm).toHaveTextContent('Delete users/bob?');
    fireEvent.click(within(confirm).getByRole('button', { name: 'Cancel' }));
    expect(api.requests('DELETE')).toHaveLength(0);
    expect(screen.getByTestId('value-viewer')).toBeInTheDocument();

    fireEvent.click(screen.getByTestId('delete-key'));
    fireEvent.click(screen.getByTestId('confirm-button'));
    await waitFor(() => {
      expect(screen.queryByTestId('value-viewer')).not.toBeInTheDocument();
    });
    expect(api.requests('DELETE')).toHaveLength(1);
  });

  it('shows a failed comparison with the value the key held, and the API’s error for an empty key', async () => {
    const api = serveRecorded([
      { method: 'POST', url: '/v1/cas', answer: () => (api.requests('POST').length === 1 ? recorded.casMiss : recorded.casEmptyKey) },
    ]);
    renderWithQuery(<KeysPage />);
    const form = screen.getByTestId('cas-form');
    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: 'users/bob' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'Expected value' }), { target: { value: 'wrong' } });
    fireEvent.change(within(form).getByRole('textbox', { name: 'New value' }), { target: { value: 'new' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Compare and swap' }));
    const result = await within(form).findByTestId('cas-result');
    expect(result).toHaveAttribute('data-succeeded', 'false');
    expect(result).toHaveTextContent('Not swapped: the comparison failed');
    expect(result).toHaveTextContent('The key held plain text for bob');
    expect(api.requests('POST')[0]?.body).toEqual({ key: 'users/bob', expected: 'wrong', value: 'new', encoding: 'utf8' });

    fireEvent.change(within(form).getByRole('textbox', { name: 'Key' }), { target: { value: '' } });
    fireEvent.click(within(form).getByRole('checkbox', { name: 'the key must not exist' }));
    fireEvent.click(within(form).getByRole('button', { name: 'Compare and swap' }));
    const error = await within(form).findByTestId('api-error');
    expect(error).toHaveTextContent(recorded.casEmptyKey.body.message);
    expect(api.requests('POST')[1]?.body).toEqual({ key: '', expected: null, value: 'new', encoding: 'utf8' });
  });

  it('shows the changes under the browsed prefix live, newest first, and resumes a lost stream where it stopped', async () => {
    // Proves the feed watches the browsed prefix from now (base64, so no byte is lost),
    // lists each change with its raft index (a batch's put and delete under one index),
    // and that a lost stream is opened again from the index after the last one sent.
    serveRecorded([...SCANS, ...READS]);
    renderWithQuery(<KeysPage />);
    browse('watch/');
    await waitFor(() => {
      expect(watches().map((w) => w.url)).toEqual([`/v1/watch?encoding=base64&progress_ms=5000&prefix=${b64('watch/')}`]);
    });
    // The stream of every key, opened before the prefix was typed, is closed.
    expect(MockEventSource.instances[0]?.url).toBe('/v1/watch?encoding=base64&progress_ms=5000');
    expect(MockEventSource.instances[0]?.closed).toBe(true);
    const stream = MockEventSource.latest();
    act(() => {
      for (const e of parseSse(watch.events.body)) stream.emit(e.event, e.data);
    });
    const rows = await screen.findAllByTestId('change-row');
    expect(rows.map((r) => [r.getAttribute('data-index'), r.textContent])).toEqual([
      ['9', '9deletewatch/a'],
      ['9', '9putwatch/btwo'],
      ['8', '8putwatch/a1'],
    ]);
    const through = Number(screen.getByTestId('change-feed').getAttribute('data-through'));
    expect(through).toBeGreaterThanOrEqual(9);
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'live');

    act(() => {
      stream.fail({ closed: false });
    });
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'reconnecting');
    await waitFor(() => {
      expect(watches().length).toBe(2);
    });
    expect(MockEventSource.latest().url).toContain(`&from_index=${through + 1}`);
  });

  it('says the feed started again from now when the history moved past it', async () => {
    // Proves a watch the server ended COMPACTED (its message shown) is opened again from
    // now, and that a resume refused again and again (a 410 the EventSource only reports
    // as a failed connection) gives up on its index after a few tries.
    serveRecorded([...SCANS, ...READS]);
    renderWithQuery(<KeysPage />);
    browse('watch/');
    await waitFor(() => {
      expect(watches().length).toBe(1);
    });
    const first = MockEventSource.latest();
    act(() => {
      for (const e of parseSse(watch.events.body)) first.emit(e.event, e.data);
      first.emit('ended', watch.compacted.body);
      first.fail({ closed: true });
    });
    expect(await screen.findByTestId('feed-restarted')).toHaveTextContent(watch.compacted.body.message);
    await waitFor(() => {
      expect(watches().length).toBe(2);
    });
    expect(MockEventSource.latest().url).not.toContain('from_index');

    // A stream that resumes from an index and is refused every time.
    const second = MockEventSource.latest();
    act(() => {
      second.emit('progress', { index: 40, node_id: 1 });
    });
    for (let i = 0; i < 3; i++) {
      const source = MockEventSource.latest();
      act(() => {
        source.fail({ closed: true });
      });
      await waitFor(() => {
        expect(watches().length).toBe(3 + i);
      });
    }
    const urls = watches().map((s) => s.url);
    expect(urls[2]).toContain('from_index=41');
    expect(urls[3]).toContain('from_index=41');
    expect(urls[4]).not.toContain('from_index');
    expect(screen.getByTestId('feed-restarted')).toHaveTextContent('could not resume from index 41');
  });
});
