// What the Keys, Actions and Load checks (*.ops.mjs) share: Debian's Chromium through playwright-core,
// a pass/fail tally, full-page screenshots into E2E_SCREENSHOT_DIR, and the admin token of
// STRATA_TOKEN_FILE for the checks that need admin.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { checkNarrowWindow } from './narrow.mjs';
import { requireAdminToken } from './token.mjs';

export const base = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';
const shots = process.env.E2E_SCREENSHOT_DIR;

export { adminHeaders, adminToken, fetchWithToken, requireReadToken } from './token.mjs';

/**
 * Signs `page` in through the header's form, as an operator does (signing out first when
 * signed in): paste the token (the admin token unless another is given), Sign in, and the
 * header names its role. Returns the header's text.
 */
export async function signInThroughForm(page, token = requireAdminToken(), role = 'admin') {
  await page.getByTestId('credential').waitFor({ timeout: 15000 });
  const signOut = page.getByTestId('sign-out-button');
  if (await signOut.isVisible()) await signOut.click();
  await page.getByTestId('sign-in-button').click();
  const form = page.getByTestId('sign-in-form');
  await form.getByRole('textbox', { name: 'Token' }).fill(token);
  await form.getByTestId('sign-in-submit').click();
  const credential = page.locator(`[data-testid="credential"][data-state="signed-in"][data-role="${role}"]`);
  await credential.waitFor({ timeout: 5000 });
  return (await credential.textContent()) ?? '';
}

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Counts checks; `report` prints the tally and sets the exit code. */
export function tally(name) {
  let passed = 0;
  let failed = 0;
  return {
    pass(message) {
      passed++;
      console.log(`${name}: ok ${message}`);
    },
    fail(message) {
      failed++;
      console.error(`${name}: FAIL ${message}`);
    },
    /** Passes when `condition` holds, fails with `message` otherwise. */
    check(condition, message) {
      if (condition) this.pass(message);
      else this.fail(message);
    },
    report() {
      console.log(`${name}: ${passed} passed, ${failed} failed`);
      process.exitCode = failed > 0 ? 1 : process.exitCode ?? 0;
    },
  };
}

export async function screenshot(page, name) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** Polls `probe` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function until(probe, timeoutMs, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Shows the page in a phone-wide window: the page must not scroll sideways (wide tables
 * scroll inside their own box), each of `visible` (selectors) must be on screen, and a
 * screenshot `<name>-narrow` is saved (e2e/narrow.mjs).
 */
export async function checkNarrow(page, name, t, visible = []) {
  await checkNarrowWindow(page, name, t, screenshot, visible);
}
