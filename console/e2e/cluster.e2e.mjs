// End-to-end check of the console against a real cluster behind Envoy, in
// Debian's Chromium driven by playwright-core:
//   1. the membership view lists every node and highlights exactly one leader;
//   2. after `kill -9` of that leader, the view highlights a new leader and
//      marks the old one unhealthy, without a page reload; the killed node is
//      started again at the end (e2e/lib.mjs), so the next file finds a whole cluster.
//
// Env: STRATA_URL (gateway that serves the console), STRATA_RUN_DIR (the
// cluster's run directory, whose pids/node<id>.pid files name the nodes),
// CHROMIUM (default /usr/bin/chromium), E2E_SCREENSHOT_DIR (optional).
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { restoreCluster } from './lib.mjs';

const base = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';
const runDir = process.env.STRATA_RUN_DIR;
const shots = process.env.E2E_SCREENSHOT_DIR;
if (!runDir) throw new Error('STRATA_RUN_DIR is required');

let failures = 0;
function fail(message) {
  console.error(`e2e: FAIL ${message}`);
  failures++;
}

async function leaderRows(page) {
  return page.locator('[data-testid^="node-row-"][data-leader="true"]').evaluateAll((rows) =>
    rows.map((r) => r.getAttribute('data-testid').replace('node-row-', '')),
  );
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let passed = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(base + '/', { waitUntil: 'domcontentloaded' });
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  await page.locator('[data-testid^="node-row-"]').nth(2).waitFor({ timeout: 15000 });
  // The cluster may be between leaders at this moment; the test starts from one.
  await page.locator('[data-testid^="node-row-"][data-leader="true"]').first().waitFor({ timeout: 15000 });
  const rows = await page.locator('[data-testid^="node-row-"]').count();
  if (rows !== 3) fail(`expected 3 node rows, saw ${rows}`); else passed++;
  const leaders = await leaderRows(page);
  if (leaders.length !== 1) fail(`expected one leader row, saw ${JSON.stringify(leaders)}`); else passed++;
  const oldLeader = leaders[0];
  if (shots) {
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, 'console-before.png'), fullPage: true });
  }

  const pid = Number(readFileSync(join(runDir, 'pids', `node${oldLeader}.pid`), 'utf8'));
  process.kill(pid, 'SIGKILL');
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
    fail(`leader highlight did not move off node ${oldLeader} within 5 s`);
  } else {
    passed++;
    console.log(`e2e: leader moved ${oldLeader} -> ${newLeader} on screen ${tookMs} ms after kill -9`);
  }
  await page.waitForFunction(
    // Runs in the page.
    // eslint-disable-next-line no-undef
    (id) => document.querySelector(`[data-testid="node-row-${id}"]`)?.getAttribute('data-healthy') === 'false',
    oldLeader,
    { timeout: 5000 },
  ).then(() => passed++, () => fail(`node ${oldLeader} was not marked unhealthy`));
  if (shots) await page.screenshot({ path: join(shots, 'console-after.png'), fullPage: true });
  await page.waitForFunction(
    // eslint-disable-next-line no-undef
    () => document.querySelector('[data-testid="node-detail-1"]') !== null,
    null,
    { timeout: 5000 },
  ).then(() => passed++, () => fail('the node details from the stats did not appear'));
  if (shots) await page.screenshot({ path: join(shots, 'cluster.png'), fullPage: true });
} finally {
  await browser.close();
  await restoreCluster();
}
console.log(`e2e: ${passed} passed, ${failures} failed`);
process.exitCode = failures > 0 ? 1 : 0;
