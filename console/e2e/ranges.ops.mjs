// Range splits from the Actions view against a real cluster behind Envoy that takes no
// request without a token, in Debian's Chromium: signed in as admin, the operator types a
// key and presses Split range; the view says which range now serves the keys from there
// (a new one, with a leader), the Cluster view lists both ranges with their leaders, a key
// past the split is written and read back through the gateway, and pressing again splits
// nothing (the view says so). A Cluster view open in another tab through it all tells of
// the split in its Range activity as it happens. Last of the ops checks: it leaves the
// cluster with two ranges.
// Env: STRATA_URL (the gateway serving the console), STRATA_TOKEN_FILE (the admin token's
// file), E2E_SCREENSHOT_DIR (optional).
import { base, checkNarrow, fetchWithToken, launch, screenshot, signInThroughForm, tally, until } from './ops-lib.mjs';

const t = tally('ranges e2e');
const SPLIT_KEY = 'zz-e2e/m';

async function status() {
  return (await fetchWithToken(`${base}/v1/cluster/status`)).json();
}

const browser = await launch();
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/#/actions`, { waitUntil: 'domcontentloaded' });
  await signInThroughForm(page);
  const before = (await status()).ranges.length;
  // Watching from the start: a second tab on the Cluster view (same sign-in).
  const watching = await context.newPage();
  await watching.goto(`${base}/#/cluster`, { waitUntil: 'domcontentloaded' });
  await watching.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });

  const form = page.getByTestId('split-form');
  await form.waitFor({ timeout: 15000 });
  await form.getByRole('textbox', { name: 'Split at key' }).fill(SPLIT_KEY);
  await form.getByRole('button', { name: 'Split range' }).click();
  const ok = form.getByTestId('split-ok');
  await ok.waitFor({ timeout: 15000 }).catch(() => {});
  const said = (await ok.textContent().catch(() => '')) ?? '';
  const id = Number(await ok.getAttribute('data-range').catch(() => '0'));
  t.check(
    (await ok.getAttribute('data-split').catch(() => null)) === 'true' && said.includes(`from ${SPLIT_KEY} on`) && said.includes('led by node'),
    `the view says a new range serves the keys from the split key, with a leader: "${said}"`,
  );
  await screenshot(page, 'ranges-split');

  const after = await until(async () => {
    const st = await status();
    return st.ranges.length === before + 1 && st.ranges.every((r) => r.leader_id !== 0) ? st : null;
  }, 15000);
  t.check(after !== null, `the status lists ${before + 1} ranges, each led: ${JSON.stringify(after?.ranges ?? null)}`);

  const told = watching.locator(`[data-testid="range-event"][data-kind="split"][data-range="${id}"]`);
  await told.waitFor({ timeout: 15000 }).catch(() => {});
  const toldText = (await told.textContent().catch(() => '')) ?? '';
  t.check(toldText.includes(`Range ${id} split`) && toldText.includes(SPLIT_KEY), `the Cluster view open meanwhile told of the split: "${toldText}"`);
  await screenshot(watching, 'ranges-activity');
  await watching.close();

  await page.goto(`${base}/#/cluster`, { waitUntil: 'domcontentloaded' });
  const row = page.getByTestId(`range-row-${id}`);
  await row.waitFor({ timeout: 15000 }).catch(() => {});
  const rowText = (await row.textContent().catch(() => '')) ?? '';
  t.check(rowText.includes(SPLIT_KEY) && (await row.getAttribute('data-leader').catch(() => '0')) !== '0', `the Cluster view lists range ${id} from ${SPLIT_KEY}, led: "${rowText}"`);
  await screenshot(page, 'ranges-cluster');
  await checkNarrow(page, 'ranges-cluster', t, [`[data-testid="range-row-${id}"] > th`]);

  const key = `${SPLIT_KEY}/written`;
  const put = await fetchWithToken(`${base}/v1/kv/${key}`, { method: 'PUT', body: 'past the split' });
  const got = await fetchWithToken(`${base}/v1/kv/${key}`);
  const value = got.ok ? await got.text() : `${got.status}`;
  t.check(put.ok && value === 'past the split', `a key past the split is written and read back through the gateway: PUT ${put.status}, GET ${value}`);

  await page.goto(`${base}/#/actions`, { waitUntil: 'domcontentloaded' });
  await form.waitFor({ timeout: 15000 });
  await form.getByRole('textbox', { name: 'Split at key' }).fill(SPLIT_KEY);
  await form.getByRole('button', { name: 'Split range' }).click();
  await page.locator('[data-testid="split-ok"][data-split="false"]').waitFor({ timeout: 15000 }).catch(() => {});
  const again = (await ok.textContent().catch(() => '')) ?? '';
  t.check(again.includes('nothing was split'), `pressing again splits nothing, and the view says so: "${again}"`);
} finally {
  await browser.close();
}
t.report();
