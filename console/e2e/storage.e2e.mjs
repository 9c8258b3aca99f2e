// The Storage view against a real cluster behind Envoy, in Debian's Chromium: writes
// enough keys that every node flushes (the cluster runs with a small
// --compact-log-entries), then asks for a compaction (POST /v1/cluster/compact) →
// the view shows every node's new flush, its tables, and the finished compaction. The
// compaction needs admin: it carries the token of STRATA_TOKEN_FILE, and the page is signed
// in with it too. In a 420 px window the view must not scroll sideways and must still
// show every node's card, its levels and its compactions.
import { adminHeaders, base, checkNarrow, launchBrowser, screenshot, signInPage, tally } from './lib.mjs';

const t = tally('storage');
const browser = await launchBrowser();

/**
 * Sends `request` again, for up to 10 s, while the answer is 503 (not applied) or 504
 * (outcome unknown: both requests here write the same thing again, so a repeat is
 * harmless). Elections during the test are the cluster's business, not the view's.
 */
async function retrying(request) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const response = await request().catch(() => ({ ok: false, status: 0 }));
    if (![0, 503, 504].includes(response.status) || Date.now() > deadline) return response;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function put(i) {
  const response = await retrying(() =>
    fetch(`${base}/v1/kv/e2e-storage-${String(i).padStart(5, '0')}`, { method: 'PUT', body: 'v'.repeat(256) }),
  );
  if (!response.ok) console.error(`e2e storage: PUT ${i} answered ${response.status}`);
  return response.ok;
}

/** Every node shows an entry of `testId` (flush, compaction) newer than `sinceMs`, done. */
function everyNodeShows(page, testId, sinceMs, ids) {
  return page.waitForFunction(
    ([kind, since, nodes]) =>
      nodes.every((id) =>
        // eslint-disable-next-line no-undef
        [...document.querySelectorAll(`[data-testid="${kind}"][data-node="${id}"]`)].some(
          (el) => Number(el.getAttribute('data-at')) >= since && el.getAttribute('data-state') !== 'running',
        ),
      ),
    [testId, sinceMs, ids],
    { timeout: 20000, polling: 100 },
  );
}

try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await signInPage(page);
  await page.goto(`${base}/#/storage`, { waitUntil: 'domcontentloaded' });
  const role = await page.getByTestId('credential').getAttribute('data-role');
  t.check(role === 'admin', `the page is signed in as admin (header role "${role}")`);
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  await page.locator('[data-testid^="storage-node-"]').nth(2).waitFor({ timeout: 15000 });
  const ids = await page
    .locator('[data-testid^="storage-node-"]')
    .evaluateAll((cards) => cards.map((c) => Number(c.getAttribute('data-testid').replace('storage-node-', ''))));
  t.check(ids.length === 3, `expected 3 node cards, saw ${ids.length}`);

  const start = Date.now() - 1000;
  let ok = 0;
  for (let i = 0; i < 300; i += 10) {
    const results = await Promise.all(Array.from({ length: 10 }, (_, k) => put(i + k)));
    ok += results.filter(Boolean).length;
  }
  t.check(ok === 300, `${ok} of 300 writes succeeded`);
  await everyNodeShows(page, 'flush', start, ids).then(
    () => t.pass(),
    () => t.fail('not every node showed a flush after the writes'),
  );

  const compactAt = Date.now() - 1000;
  const response = await retrying(() =>
    fetch(`${base}/v1/cluster/compact`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...adminHeaders() },
      body: '{}',
    }),
  );
  const answer = await response.json();
  t.check(response.ok && answer.nodes.length === 3, `compact answered ${response.status} ${JSON.stringify(answer)}`);
  const compactedAt = Date.now();
  await everyNodeShows(page, 'compaction', compactAt, ids).then(
    () => {
      t.pass();
      console.log(`e2e storage: every node's finished compaction on screen ${Date.now() - compactedAt} ms after the answer`);
    },
    () => t.fail('not every node showed the finished compaction'),
  );
  for (const id of ids) {
    const files = Number(await page.locator(`[data-testid="level-${id}-1"]`).getAttribute('data-files'));
    t.check(files >= 1, `node ${id} shows ${files} tables in L1 after the compaction`);
  }
  await page.waitForTimeout(2500);
  await screenshot(page, 'storage');
  await checkNarrow(page, 'storage', t, [
    '[data-testid^="storage-node-"]',
    '[data-testid^="level-"] > th',
    '[data-testid="compaction"]',
    '[data-testid="compaction-chart"]',
  ]);
} finally {
  await browser.close();
}
t.done();
