// End-to-end check of the console against a real cluster behind Envoy, in
// Debian's Chromium driven by playwright-core:
//   1. the membership view lists every node and highlights exactly one leader;
//   2. after `kill -9` of that leader, the view highlights a new leader and
//      marks the old one unhealthy, without a page reload; the killed node is
//      started again at the end (e2e/lib.mjs), so the next file finds a whole cluster;
//   3. in a 420 px window the view does not scroll sideways and still shows the
//      leader, the healthy count and every member's row (its name at least; the
//      table scrolls inside its own box), with the killed node still down.
//
// Env: STRATA_URL (gateway that serves the console), STRATA_RUN_DIR (the
// cluster's run directory, whose pids/node<id>.pid files name the nodes),
// CHROMIUM (default /usr/bin/chromium), E2E_SCREENSHOT_DIR (optional).
import { base, checkNarrow, launchBrowser, nodePid, restoreCluster, screenshot, tally } from './lib.mjs';

const t = tally('cluster');

async function leaderRows(page) {
  return page.locator('[data-testid^="node-row-"][data-leader="true"]').evaluateAll((rows) =>
    rows.map((r) => r.getAttribute('data-testid').replace('node-row-', '')),
  );
}

const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(base + '/', { waitUntil: 'domcontentloaded' });
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  await page.locator('[data-testid^="node-row-"]').nth(2).waitFor({ timeout: 15000 });
  // The cluster may be between leaders at this moment; the test starts from one.
  await page.locator('[data-testid^="node-row-"][data-leader="true"]').first().waitFor({ timeout: 15000 });
  const rows = await page.locator('[data-testid^="node-row-"]').count();
  t.check(rows === 3, `expected 3 node rows, saw ${rows}`);
  const leaders = await leaderRows(page);
  t.check(leaders.length === 1, `expected one leader row, saw ${JSON.stringify(leaders)}`);
  const oldLeader = leaders[0];
  // The Ranges panel: one range over every key, led by the leader the table shows.
  const rangeLeader = await page.getByTestId('range-row-1').getAttribute('data-leader');
  t.check(rangeLeader === oldLeader, `the range's leader is node ${oldLeader}, saw ${rangeLeader}`);
  await screenshot(page, 'console-before');

  process.kill(nodePid(oldLeader), 'SIGKILL');
  const killedAt = Date.now();
  const deadline = killedAt + 5000;
  let newLeader;
  for (;;) {
    const now = await leaderRows(page);
    if (now.length === 1 && now[0] !== oldLeader) {
      newLeader = now[0];
      break;
    }
    if (Date.now() > deadline) break;
    await page.waitForTimeout(25);
  }
  const tookMs = Date.now() - killedAt;
  if (!newLeader) {
    t.fail(`leader highlight did not move off node ${oldLeader} within 5 s`);
  } else {
    t.pass();
    console.log(`e2e: leader moved ${oldLeader} -> ${newLeader} on screen ${tookMs} ms after kill -9`);
  }
  await page.waitForFunction(
    // Runs in the page.
    // eslint-disable-next-line no-undef
    (id) => document.querySelector(`[data-testid="node-row-${id}"]`)?.getAttribute('data-healthy') === 'false',
    oldLeader,
    { timeout: 5000 },
  ).then(() => t.pass(), () => t.fail(`node ${oldLeader} was not marked unhealthy`));
  if (newLeader) {
    await page.waitForFunction(
      // eslint-disable-next-line no-undef
      (id) => document.querySelector('[data-testid="range-row-1"]')?.getAttribute('data-leader') === id,
      newLeader,
      { timeout: 5000 },
    ).then(() => t.pass(), () => t.fail(`the range's leader did not become node ${newLeader}`));
  }
  await screenshot(page, 'console-after');
  await page.waitForFunction(
    // eslint-disable-next-line no-undef
    () => document.querySelector('[data-testid="node-detail-1"]') !== null,
    null,
    { timeout: 5000 },
  ).then(() => t.pass(), () => t.fail('the node details from the stats did not appear'));
  await screenshot(page, 'cluster');
  await checkNarrow(page, 'cluster', t, [
    '[data-testid="stream-status"]',
    '[data-testid="cluster-leader"]',
    '[data-testid="cluster-healthy"]',
    '[data-testid^="node-row-"] > th',
    '[data-testid^="node-detail-"]',
  ]);
} finally {
  await browser.close();
  await restoreCluster();
}
t.done();
