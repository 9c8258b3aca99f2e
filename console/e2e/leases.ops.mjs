// The Leases view against a real cluster behind Envoy, in Debian's Chromium:
//   1. a lease granted from the view is in the cluster's list, its TTL counting down;
//   2. a key put under it from the view and one put by a plain HTTP client are listed
//      as its keys, with the count in the list;
//   3. "Keep alive once" starts its TTL again;
//   4. revoking it from the view (after a confirmation naming how many keys go with
//      it) ends it: the API answers 404 for both keys and for the lease.
// Env: STRATA_URL (the gateway serving the console), E2E_SCREENSHOT_DIR (optional).
import { base, checkNarrow, fetchWithToken, launch, screenshot, signInThroughForm, tally, until } from './ops-lib.mjs';

const t = tally('leases e2e');
const prefix = `e2e/leases/${Date.now()}`;
const viaView = `${prefix}/from-the-view`;
const viaFetch = `${prefix}/from-curl`;
const keyUrl = (key) => `${base}/v1/kv/${encodeURIComponent(key)}`;

const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/#/leases`, { waitUntil: 'domcontentloaded' });
  await signInThroughForm(page);

  const grant = page.getByTestId('grant-form');
  await grant.getByRole('textbox', { name: 'TTL' }).fill('120s');
  await grant.getByRole('button', { name: 'Grant' }).click();
  await grant.getByTestId('granted').waitFor({ timeout: 10000 });
  const detail = page.getByTestId('lease-detail');
  await detail.waitFor({ timeout: 10000 });
  const id = Number(await detail.getAttribute('data-lease-id'));
  const listed = await (await fetchWithToken(`${base}/v1/leases`)).json();
  const entry = listed.leases.find((l) => l.id === id);
  t.check(entry?.ttl_ms === 120000, `the lease granted from the view (${id}) is in the cluster's list with a 120 s TTL`);

  const put = detail.getByTestId('put-form');
  await put.getByRole('textbox', { name: 'Key' }).fill(viaView);
  await put.getByRole('textbox', { name: 'Value' }).fill('held by the lease');
  await put.getByRole('button', { name: 'Put' }).click();
  await put.getByTestId('put-ok').waitFor({ timeout: 10000 });
  const read = await (await fetchWithToken(`${keyUrl(viaView)}?encoding=base64`, { headers: { Accept: 'application/json' } })).json();
  t.check(read.lease === id, `the key put from the view is under lease ${id} (${read.lease})`);
  const byFetch = await fetchWithToken(`${keyUrl(viaFetch)}?lease=${id}`, { method: 'PUT', body: 'put by another client' });
  t.check(byFetch.status === 200, `a plain PUT ?lease=${id} is accepted (${byFetch.status})`);

  const row = page.locator(`[data-testid="lease-row"][data-lease-id="${id}"]`);
  const count = await until(async () => (await row.getByTestId('lease-key-count').textContent()) === '2', 12000);
  t.check(count, 'the list counts the lease’s 2 keys');
  await detail.locator(`[data-testid="lease-key"][data-key="${viaFetch}"]`).waitFor({ timeout: 10000 });
  await detail.locator(`[data-testid="lease-key"][data-key="${viaView}"]`).waitFor({ timeout: 10000 });
  t.pass('both keys are listed under the lease');

  const remaining = async () => Number(await row.getByTestId('lease-remaining').getAttribute('data-remaining-ms'));
  const first = await remaining();
  await page.waitForTimeout(2100);
  const later = await remaining();
  t.check(first - later >= 1500 && first - later <= 3500, `the remaining TTL counts down in the browser (${first} → ${later} ms)`);

  await detail.getByTestId('keep-alive').click();
  await detail.getByTestId('kept-alive').waitFor({ timeout: 10000 });
  const renewed = await until(async () => (await remaining()) > later + 1000 && (await remaining()), 8000);
  t.check(renewed > later, `keep-alive starts the TTL again (${later} → ${renewed} ms)`);

  await detail.locator(`[data-testid="lease-key"][data-key="${viaView}"]`).click();
  await detail.getByTestId('value-text').waitFor({ timeout: 10000 });
  await screenshot(page, 'leases');
  await checkNarrow(page, 'leases', t);

  await detail.getByTestId('revoke-lease').click();
  const confirm = page.getByRole('alertdialog', { name: 'Revoke lease' });
  const text = await confirm.textContent();
  t.check(text.includes(`Revoke lease ${id}?`) && text.includes('2 keys'), 'the confirmation names the lease and says its 2 keys are deleted with it');
  await screenshot(page, 'leases-confirm-revoke');
  await confirm.getByTestId('confirm-button').click();
  const revoked = page.getByTestId('revoked');
  await revoked.waitFor({ timeout: 10000 });
  t.check((await revoked.textContent()).includes('2 keys deleted'), 'the view reports the 2 keys the revoke deleted');
  await row.waitFor({ state: 'detached', timeout: 10000 });
  t.pass('the lease is gone from the list');

  for (const key of [viaView, viaFetch]) {
    const gone = await fetchWithToken(keyUrl(key));
    const body = await gone.json().catch(() => null);
    t.check(gone.status === 404 && body?.code === 'NOT_FOUND', `after the revoke ${key} answers 404 NOT_FOUND (${gone.status})`);
  }
  const lease = await fetchWithToken(`${base}/v1/leases/${id}`);
  t.check(lease.status === 404, `after the revoke the lease answers 404 (${lease.status})`);
  await screenshot(page, 'leases-after-revoke');
} catch (e) {
  t.fail(`${e.message}`);
} finally {
  await browser.close();
}
t.report();
