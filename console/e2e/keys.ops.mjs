// The Keys view against a real cluster behind Envoy, in Debian's Chromium:
//   1. a value put from the view is what a plain HTTP client reads back through Envoy;
//   2. the key is listed under its prefix and its JSON value is shown pretty-printed;
//   3. a write by another client under the browsed prefix appears in the change feed
//      with the raft index its answer gave;
//   4. deleting it from the view (after confirming) makes the API answer 404, and the
//      feed shows the delete.
// The cluster takes no request without a token: signed out, the view shows the refusal;
// signed in (admin), everything above works, its live feed included.
// Env: STRATA_URL (the gateway serving the console), STRATA_TOKEN_FILE (an admin token),
// E2E_SCREENSHOT_DIR (optional).
import { base, checkNarrow, fetchWithToken, launch, screenshot, signInThroughForm, tally, until } from './ops-lib.mjs';

const t = tally('keys e2e');
const key = `e2e/keys/${Date.now()}`;
const value = JSON.stringify({ written: 'from the console', n: 7 });
const keyUrl = `${base}/v1/kv/${encodeURIComponent(key)}`;

const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/#/keys`, { waitUntil: 'domcontentloaded' });
  const refused = page.locator('[data-testid="api-error"][data-status="401"]');
  t.check(await until(async () => (await refused.count()) > 0, 10000), 'signed out, the view shows the 401 refusal');
  await screenshot(page, 'keys-signed-out');
  await signInThroughForm(page);

  const put = page.getByTestId('put-form');
  await put.getByRole('textbox', { name: 'Key' }).fill(key);
  await put.getByRole('textbox', { name: 'Value' }).fill(value);
  await put.getByRole('button', { name: 'Put' }).click();
  await put.getByTestId('put-ok').waitFor({ timeout: 10000 });

  const read = await fetchWithToken(keyUrl);
  t.check(read.status === 200 && (await read.text()) === value, `the put value reads back through Envoy (${read.status})`);

  await page.getByRole('textbox', { name: 'Prefix' }).fill('e2e/keys/');
  await page.getByRole('button', { name: 'Browse' }).click();
  await page.locator(`[data-testid="key-row"][data-key="${key}"]`).waitFor({ timeout: 10000 });
  t.pass('the key is listed under its prefix');
  const shown = page.getByTestId('value-text');
  await shown.waitFor({ timeout: 10000 });
  t.check((await shown.getAttribute('data-kind')) === 'json', 'the value is shown as JSON');
  t.check((await shown.textContent()) === JSON.stringify(JSON.parse(value), null, 2), 'the JSON is pretty-printed');
  const other = `${key}-by-another-client`;
  const written = await fetchWithToken(`${base}/v1/kv/${encodeURIComponent(other)}`, { method: 'PUT', body: 'from curl' });
  const { index } = await written.json();
  await page.locator(`[data-testid="change-row"][data-index="${index}"]`).waitFor({ timeout: 5000 });
  t.pass(`another client's write appears in the change feed at its index ${index}`);
  await screenshot(page, 'keys');
  await checkNarrow(page, 'keys', t);

  await page.getByTestId('delete-key').click();
  await page.getByTestId('confirm-button').click();
  await page.getByTestId('value-viewer').waitFor({ state: 'detached', timeout: 10000 });
  const gone = await fetchWithToken(keyUrl);
  const body = await gone.json().catch(() => null);
  t.check(gone.status === 404 && body?.code === 'NOT_FOUND', `after the delete the API answers 404 NOT_FOUND (${gone.status})`);
  await page.locator('[data-testid="change-row"]', { hasText: `delete${key}` }).first().waitFor({ timeout: 5000 });
  t.pass('the delete appears in the change feed');
  await screenshot(page, 'keys-after-delete');
} catch (e) {
  t.fail(`${e.message}`);
} finally {
  await browser.close();
}
t.report();
