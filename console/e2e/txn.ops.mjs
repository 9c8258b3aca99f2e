// The Keys view's transaction form against a real cluster behind Envoy, in Debian's
// Chromium:
//   1. "Compare-and-swap on its mod index" from a key being viewed fills the form; run
//      as it stands, its compare holds, the success branch puts the new value, and a
//      plain HTTP client reads that value back;
//   2. run again, the mod index it compares is stale: the failure branch runs, its get
//      shows the value the key holds (pretty-printed JSON), and the key is unchanged.
// Env: STRATA_URL (the gateway serving the console), E2E_SCREENSHOT_DIR (optional).
import { base, fetchWithToken, launch, screenshot, signInThroughForm, tally } from './ops-lib.mjs';

const t = tally('txn e2e');
const prefix = `e2e/txn/${Date.now()}/`;
const key = `${prefix}acct`;
const keyUrl = `${base}/v1/kv/${encodeURIComponent(key)}`;
const before = JSON.stringify({ balance: 5 });
const swapped = JSON.stringify({ balance: 6 });
const late = JSON.stringify({ balance: 7 });

const browser = await launch();
try {
  const written = await fetchWithToken(keyUrl, { method: 'PUT', body: before });
  t.check(written.status === 200, `the key is written by a plain HTTP client (${written.status})`);
  const { mod_index: modIndex } = await (await fetchWithToken(`${keyUrl}?encoding=base64`, { headers: { Accept: 'application/json' } })).json();

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/#/keys`, { waitUntil: 'domcontentloaded' });
  await signInThroughForm(page);
  await page.getByRole('textbox', { name: 'Prefix' }).fill(prefix);
  await page.getByRole('button', { name: 'Browse' }).click();
  await page.locator(`[data-testid="key-row"][data-key="${key}"]`).click();
  await page.getByTestId('value-text').waitFor({ timeout: 10000 });
  await page.getByTestId('start-cas-txn').click();

  const form = page.getByTestId('txn-form');
  const operand = await form.getByRole('textbox', { name: 'Compare 1 operand' }).inputValue();
  t.check(operand === String(modIndex), `the form compares the key's mod index ${modIndex} (${operand})`);
  await form.getByRole('textbox', { name: 'Success op 1 value' }).fill(swapped);
  await form.getByRole('button', { name: 'Run transaction' }).click();
  const result = form.getByTestId('txn-result');
  await result.waitFor({ timeout: 10000 });
  t.check((await result.getAttribute('data-succeeded')) === 'true', 'the compare holds: the success branch ran');
  const afterFirst = await (await fetchWithToken(keyUrl)).text();
  t.check(afterFirst === swapped, `the cluster holds the swapped value (${afterFirst})`);
  await screenshot(page, 'txn-succeeded');

  await form.getByRole('textbox', { name: 'Success op 1 value' }).fill(late);
  await form.getByRole('button', { name: 'Run transaction' }).click();
  await page.locator('[data-testid="txn-result"][data-succeeded="false"]').waitFor({ timeout: 10000 });
  t.pass('the stale mod index fails the compare: the failure branch ran');
  const shown = form.getByTestId('txn-value').first();
  t.check(
    (await shown.getAttribute('data-kind')) === 'json' && (await shown.textContent()) === JSON.stringify(JSON.parse(swapped), null, 2),
    'the failure branch’s get shows the value held, pretty-printed',
  );
  const afterSecond = await (await fetchWithToken(keyUrl)).text();
  t.check(afterSecond === swapped, `the cluster still holds the swapped value (${afterSecond})`);
  await form.scrollIntoViewIfNeeded();
  await screenshot(page, 'txn-failed');
} catch (e) {
  t.fail(`${e.message}`);
} finally {
  await browser.close();
}
t.report();
