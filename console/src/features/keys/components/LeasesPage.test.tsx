import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import recorded from '../../../test/recorded/leases.json';
import { serveRecorded, type Route } from '../../../test/recordedApi';
import { formatClock } from '../../../lib/format';
import { renderWithQuery } from '../../../test/render';
import { LeasesPage } from './LeasesPage';

// Every answer below was recorded from a real cluster by scripts/record-payloads.mjs:
// LEASE (60 s) with keys lease/a and lease/b, OWN granted by a put with ?ttl=30s.
const LEASE = recorded.granted.body.id;
const OWN = recorded.putWithTtl.body.lease;

// The list's route is the bare path: the other lease routes start with it too.
const LIST = /^\/v1\/leases$/;

const READS: Route[] = [
  { method: 'GET', url: LIST, answer: recorded.list },
  { method: 'GET', url: `/v1/leases/${LEASE}?keys=true&encoding=base64`, answer: recorded.timeToLive },
  { method: 'GET', url: `/v1/leases/${OWN}?keys=true&encoding=base64`, answer: recorded.timeToLiveOwn },
];

function row(id: number) {
  return screen.getByTestId('lease-list-body').querySelector(`[data-testid="lease-row"][data-lease-id="${id}"]`);
}

async function openLease(id: number) {
  fireEvent.click(await screen.findByRole('button', { name: `Lease ${id}` }));
  return screen.findByTestId('lease-detail');
}

interface LeaseList {
  status: number;
  body: { leases: { id: number }[] };
}

/** The lease ids a recorded list answer holds, in its order. */
function listed(list: LeaseList): number[] {
  return list.body.leases.map((lease) => lease.id);
}

/** The row `id` has in a recorded list answer, which the test expects to be there. */
function leaseIn(list: typeof recorded.list, id: number) {
  const lease = list.body.leases.find((l) => l.id === id);
  if (!lease) throw new Error(`the recorded list holds no lease ${id}`);
  return lease;
}

/** The lease ids the view's list shows, in its order. */
function shown(): number[] {
  return Array.from(screen.getByTestId('lease-list-body').querySelectorAll('[data-testid="lease-row"]'), (r) =>
    Number(r.getAttribute('data-lease-id')),
  );
}

/**
 * Revokes LEASE from its view (cancelling the first confirmation), with `listAfter` as
 * every list read once the DELETE has left, and returns once the view shows that read.
 * The browser's clock is held still and moved on before the confirmation, so the list's
 * "read at" clock tells the read after the revoke from the one before.
 */
async function revokeFromView(listAfter: LeaseList) {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(1_000_000);
  const api = serveRecorded([
    { method: 'GET', url: LIST, answer: () => (api.requests('DELETE').length === 0 ? recorded.list : listAfter) },
    ...READS.slice(1),
    { method: 'DELETE', url: `/v1/leases/${LEASE}`, answer: recorded.revoked },
  ]);
  renderWithQuery(<LeasesPage />);
  const detail = await openLease(LEASE);
  await within(detail).findAllByTestId('lease-key');
  expect(shown()).toEqual(listed(recorded.list));
  fireEvent.click(within(detail).getByTestId('revoke-lease'));
  const confirm = screen.getByRole('alertdialog', { name: 'Revoke lease' });
  expect(confirm).toHaveTextContent(`Revoke lease ${LEASE}? Its 2 keys (lease/a, lease/b) will be deleted with it`);
  fireEvent.click(within(confirm).getByRole('button', { name: 'Cancel' }));
  expect(api.requests('DELETE')).toHaveLength(0);

  const revokedAt = 1_000_000 + 60_000;
  vi.setSystemTime(revokedAt);
  fireEvent.click(within(detail).getByTestId('revoke-lease'));
  fireEvent.click(screen.getByTestId('confirm-button'));
  expect(await screen.findByTestId('revoked')).toHaveTextContent(
    `Lease ${LEASE} revoked at index ${recorded.revoked.body.index}: 2 keys deleted.`,
  );
  expect(screen.queryByTestId('lease-detail')).not.toBeInTheDocument();
  await waitFor(() => {
    expect(screen.getByTestId('leases-read')).toHaveTextContent(`read at ${formatClock(revokedAt)}`);
  });
  const reads = api.requests('GET', LIST);
  expect(reads.length).toBeGreaterThanOrEqual(2);
  const lastRead = reads[reads.length - 1];
  const revoke = api.requests('DELETE')[0];
  expect(lastRead && revoke && api.sent.indexOf(lastRead) > api.sent.indexOf(revoke)).toBe(true);
  return api;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('LeasesPage', () => {
  it('lists every lease with its granted TTL, its key count, and the remaining TTL counting down', async () => {
    // Proves the countdown runs in the browser from the leader's remaining_ms (the
    // browser's clock is driven here: 3 s pass without a new answer), and the key count
    // comes from each lease's own time-to-live answer.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    serveRecorded(READS);
    renderWithQuery(<LeasesPage />);
    await waitFor(() => {
      expect(within(row(LEASE) as HTMLElement).getByTestId('lease-key-count')).toHaveTextContent('2');
    });
    const lease = row(LEASE) as HTMLElement;
    const own = row(OWN) as HTMLElement;
    expect(lease).toHaveTextContent('1 min 0 s');
    expect(within(own).getByTestId('lease-key-count')).toHaveTextContent('1');
    expect(own).toHaveTextContent('30.0 s');
    // Their remaining_ms as read (just under 60 s and 30 s).
    const read = leaseIn(recorded.list, LEASE);
    expect(within(lease).getByTestId('lease-remaining')).toHaveTextContent('1 min 00 s');
    expect(within(own).getByTestId('lease-remaining')).toHaveTextContent('30 s');

    vi.setSystemTime(1_003_000);
    await waitFor(() => {
      expect(within(own).getByTestId('lease-remaining')).toHaveTextContent('27 s');
    });
    expect(within(lease).getByTestId('lease-remaining')).toHaveTextContent('57 s');
    expect(within(lease).getByTestId('lease-remaining')).toHaveAttribute('data-remaining-ms', String(read.remaining_ms - 3000));

    vi.setSystemTime(1_031_000);
    await waitFor(() => {
      expect(within(own).getByTestId('lease-remaining')).toHaveTextContent('running out');
    });
  });

  it('shows one lease’s keys, and keeps it alive once', async () => {
    const api = serveRecorded([
      ...READS,
      { method: 'POST', url: `/v1/leases/${LEASE}/keepalive`, answer: () => (api.requests('POST').length === 1 ? recorded.keptAlive : recorded.keepAliveEnded) },
    ]);
    renderWithQuery(<LeasesPage />);
    const detail = await openLease(LEASE);
    await waitFor(() => {
      expect(within(detail).getAllByTestId('lease-key').map((k) => k.getAttribute('data-key'))).toEqual(['lease/a', 'lease/b']);
    });
    expect(within(detail).getByTestId('lease-ttl')).toHaveTextContent('1 min 0 s');
    fireEvent.click(within(detail).getByTestId('keep-alive'));
    expect(await within(detail).findByTestId('kept-alive')).toHaveTextContent('Kept alive: its 1 min 0 s TTL runs again from now.');
    expect(api.requests('POST', `/v1/leases/${LEASE}/keepalive`)).toHaveLength(1);

    // Once it has ended, the keep-alive's 404 is shown as the API gave it.
    fireEvent.click(within(detail).getByTestId('keep-alive'));
    const error = await within(detail).findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'NOT_FOUND');
    expect(error).toHaveTextContent('HTTP 404');
    expect(error).toHaveTextContent(recorded.keepAliveEnded.body.message);
  });

  it('revokes only after a confirmation that says how many keys go with it', async () => {
    // Proves no DELETE leaves before the operator confirms, that the confirmation names
    // the keys the revoke deletes, and that the answer's keys_deleted is reported. The
    // list read right after the revoke (recorded so) no longer holds the lease, because
    // the API acknowledged the revoke before that read: the row goes because the API
    // says so, and the list shows exactly the leases the API answered.
    expect(listed(recorded.listAfterRevoke)).not.toContain(LEASE);
    expect(listed(recorded.listAfterRevoke)).toContain(OWN);
    const api = await revokeFromView(recorded.listAfterRevoke);
    expect(api.requests('DELETE', `/v1/leases/${LEASE}`)).toHaveLength(1);
    expect(row(LEASE)).toBeNull();
    expect(shown()).toEqual(listed(recorded.listAfterRevoke));
    expect(screen.getByTestId('leases-read')).toHaveTextContent(`${recorded.listAfterRevoke.body.leases.length} lease`);
  });

  it('shows a lease the list read after a revoke still holds', async () => {
    // The view hides nothing the API lists: had the list read after the revoke still
    // held the lease (the recorded list after the revoke with the recorded row of the
    // lease put back), its row is shown, with the remaining TTL that read gave.
    const before = leaseIn(recorded.list, LEASE);
    const stillListed = {
      status: recorded.listAfterRevoke.status,
      body: { ...recorded.listAfterRevoke.body, leases: [before, ...recorded.listAfterRevoke.body.leases] },
    };
    await revokeFromView(stillListed);
    expect(shown()).toEqual(listed(stillListed));
    const lease = row(LEASE) as HTMLElement;
    expect(lease).not.toBeNull();
    expect(within(lease).getByTestId('lease-remaining')).toHaveAttribute('data-remaining-ms', String(before.remaining_ms));
  });

  it('names the one key a revoke deletes, and says when it deletes none', async () => {
    const api = serveRecorded(READS);
    renderWithQuery(<LeasesPage />);
    const detail = await openLease(OWN);
    await within(detail).findAllByTestId('lease-key');
    fireEvent.click(within(detail).getByTestId('revoke-lease'));
    expect(screen.getByRole('alertdialog', { name: 'Revoke lease' })).toHaveTextContent(
      `Revoke lease ${OWN}? Its key (lease/own) will be deleted with it`,
    );

    // The same lease once its key is gone (the recorded answer without keys).
    const noKeys = { status: 200, body: { ...recorded.timeToLiveOwn.body, keys: [] } };
    serveRecorded([{ method: 'GET', url: `/v1/leases/${OWN}?`, answer: noKeys }, ...READS]);
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    fireEvent.click(await screen.findByRole('button', { name: `Lease ${LEASE}` }));
    fireEvent.click(await screen.findByRole('button', { name: `Lease ${OWN}` }));
    await screen.findByTestId('lease-detail');
    await waitFor(() => {
      expect(within(screen.getByTestId('lease-detail')).getByTestId('lease-no-keys')).toBeInTheDocument();
    }, { timeout: 6000 });
    fireEvent.click(within(screen.getByTestId('lease-detail')).getByTestId('revoke-lease'));
    expect(screen.getByRole('alertdialog', { name: 'Revoke lease' })).toHaveTextContent(
      `Revoke lease ${OWN}? It holds no key, so nothing else is deleted.`,
    );
    expect(api.requests('DELETE')).toHaveLength(0);
  });

  it('grants a lease with the TTL as typed and shows the API’s refusals verbatim', async () => {
    // Proves the TTL is left for the API to judge (its INVALID_ARGUMENT and ALREADY_EXISTS
    // shown with code and message), and a granted lease is opened.
    const answers = [recorded.grantTtlTooShort, recorded.grantTaken, recorded.granted];
    const api = serveRecorded([...READS, { method: 'POST', url: '/v1/leases', answer: () => answers[api.requests('POST').length - 1] ?? recorded.granted }]);
    renderWithQuery(<LeasesPage />);
    const form = screen.getByTestId('grant-form');
    const ttl = within(form).getByRole('textbox', { name: 'TTL' });
    const id = within(form).getByRole('textbox', { name: 'Id (optional)' });
    fireEvent.change(ttl, { target: { value: '10ms' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Grant' }));
    let error = await within(form).findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'INVALID_ARGUMENT');
    expect(error).toHaveTextContent(recorded.grantTtlTooShort.body.message);
    expect(api.requests('POST')[0]?.body).toEqual({ ttl: '10ms' });

    fireEvent.change(id, { target: { value: 'twelve' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Grant' }));
    expect(within(form).getByRole('alert')).toHaveTextContent('The id must be a whole number (got “twelve”).');
    expect(api.requests('POST')).toHaveLength(1);

    fireEvent.change(ttl, { target: { value: '60s' } });
    fireEvent.change(id, { target: { value: String(LEASE) } });
    fireEvent.click(within(form).getByRole('button', { name: 'Grant' }));
    await waitFor(() => {
      expect(within(form).getByTestId('api-error')).toHaveAttribute('data-code', 'ALREADY_EXISTS');
    });
    error = within(form).getByTestId('api-error');
    expect(error).toHaveTextContent('HTTP 409');
    expect(error).toHaveTextContent(recorded.grantTaken.body.message);
    expect(api.requests('POST')[1]?.body).toEqual({ ttl: '60s', id: LEASE });

    fireEvent.change(id, { target: { value: '' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Grant' }));
    expect(await within(form).findByTestId('granted')).toHaveTextContent(`Granted lease ${LEASE} with a TTL of 1 min 0 s`);
    expect(api.requests('POST')[2]?.body).toEqual({ ttl: '60s' });
    expect(await screen.findByTestId('lease-detail')).toHaveAttribute('data-lease-id', String(LEASE));
  });

  it('shows a lease that ended as the API says', async () => {
    serveRecorded([
      { method: 'GET', url: LIST, answer: recorded.list },
      { method: 'GET', url: `/v1/leases/${LEASE}?`, answer: recorded.timeToLiveEnded },
      { method: 'GET', url: `/v1/leases/${OWN}?`, answer: recorded.timeToLiveOwn },
    ]);
    renderWithQuery(<LeasesPage />);
    fireEvent.click(await screen.findByRole('button', { name: `Lease ${LEASE}` }));
    const error = await screen.findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'NOT_FOUND');
    expect(error).toHaveTextContent(`Reading lease ${LEASE} failed`);
    expect(error).toHaveTextContent(recorded.timeToLiveEnded.body.message);
  });

  it('puts a key under the lease from its view', async () => {
    const api = serveRecorded([
      ...READS,
      { method: 'PUT', url: `/v1/kv/lease%2Fa?lease=${LEASE}`, answer: recorded.putUnderLease },
      { method: 'GET', url: '/v1/kv/lease%2Fa?', answer: recorded.keyAfterRevoke },
    ]);
    renderWithQuery(<LeasesPage />);
    const detail = await openLease(LEASE);
    const put = within(detail).getByTestId('put-form');
    fireEvent.change(within(put).getByRole('textbox', { name: 'Key' }), { target: { value: 'lease/a' } });
    fireEvent.change(within(put).getByRole('textbox', { name: 'Value' }), { target: { value: 'held by the lease' } });
    expect(within(put).queryByRole('combobox', { name: 'Lease' })).not.toBeInTheDocument();
    fireEvent.click(within(put).getByRole('button', { name: 'Put' }));
    expect(await within(put).findByTestId('put-ok')).toHaveTextContent(`under lease ${LEASE}`);
    expect(api.requests('PUT')[0]).toMatchObject({
      url: `/v1/kv/lease%2Fa?lease=${LEASE}`,
      body: { value: 'held by the lease', encoding: 'utf8' },
    });
  });
});
