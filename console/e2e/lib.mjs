// Shared by the end-to-end files: the browser, the cluster's processes, screenshots, and the
// admin token of STRATA_TOKEN_FILE for what needs admin.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { checkNarrowWindow } from './narrow.mjs';
import { requireAdminToken } from './token.mjs';

export const base = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';
export const runDir = process.env.STRATA_RUN_DIR;
export const shots = process.env.E2E_SCREENSHOT_DIR;
if (!runDir) throw new Error('STRATA_RUN_DIR is required');

export { adminHeaders, adminToken } from './token.mjs';

/**
 * Signs `page` in as admin before any script of it runs, on every load: the token goes
 * into localStorage under `strata.token`, where the console keeps it.
 */
export async function signInPage(page) {
  const token = requireAdminToken();
  await page.addInitScript((value) => {
    // Runs in the page.
    // eslint-disable-next-line no-undef
    window.localStorage.setItem('strata.token', value);
  }, token);
}

export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Counts passes and failures of one file and reports them at its end. */
export function tally(name) {
  let passed = 0;
  let failed = 0;
  return {
    pass() {
      passed++;
    },
    fail(message) {
      console.error(`e2e ${name}: FAIL ${message}`);
      failed++;
    },
    check(ok, message) {
      if (ok) passed++;
      else this.fail(message);
    },
    done() {
      console.log(`e2e ${name}: ${passed} passed, ${failed} failed`);
      process.exitCode = failed > 0 ? 1 : 0;
    },
  };
}

/** A full-page screenshot under E2E_SCREENSHOT_DIR, when set. */
export async function screenshot(page, name) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/**
 * The view in a phone-wide window (e2e/narrow.mjs): no sideways scrolling, each of
 * `visible` (selectors) on screen, and a screenshot `<name>-narrow`.
 */
export async function checkNarrow(page, name, t, visible = []) {
  await checkNarrowWindow(page, name, t, screenshot, visible);
}

export function nodePid(id) {
  return Number(readFileSync(join(runDir, 'pids', `node${id}.pid`), 'utf8'));
}

export async function clusterStatus() {
  const response = await fetch(`${base}/v1/cluster/status`);
  if (!response.ok) throw new Error(`status: HTTP ${response.status}`);
  return response.json();
}

/**
 * Starts again every node that no longer runs (after a test's kill -9) with
 * strata-cluster (STRATA_CLUSTER_BIN), and waits until every member is healthy, so
 * the next test finds a whole cluster.
 */
export async function restoreCluster(timeoutMs = 30000) {
  const bin = process.env.STRATA_CLUSTER_BIN;
  if (!bin) throw new Error('STRATA_CLUSTER_BIN is required to restart nodes');
  const status = await clusterStatus();
  for (const node of status.nodes) {
    if (!node.healthy) {
      execFileSync(bin, ['start-node', '--run-dir', runDir, '--id', String(node.id)], { stdio: 'inherit' });
    }
  }
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const now = await clusterStatus().catch(() => null);
    if (now && now.leader_id !== 0 && now.nodes.every((n) => n.healthy)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the cluster did not become whole again');
}
