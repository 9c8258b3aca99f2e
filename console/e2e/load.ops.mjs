// The Load view against a real cluster behind Envoy, in Debian's Chromium:
//   1. the k6 smoke scenario started from the view runs through the cluster's load runner;
//   2. while it runs, both the nodes' throughput (from their counters over the event
//      stream) and k6's own figures (its event stream through Envoy's /k6/events), p99
//      included, go above zero;
//   3. the run ends by itself (finished, or failed on a crossed threshold: never stopped),
//      and k6's last figures stay on view;
//   4. the view followed the run's state over the runner's event stream
//      (/load/run/events): from the start to the end it neither asked GET /load/run nor
//      opened that stream again, though the run outlasts the gateway's 5 s timeout of /load/.
// Starting a run needs the admin role: a plain request without a token is refused (401) and
// starts nothing; the view starts it signed in.
// Env: STRATA_URL (the gateway serving the console), STRATA_TOKEN_FILE (an admin token),
// E2E_SCREENSHOT_DIR (optional).
import { base, checkNarrow, fetchWithToken, launch, screenshot, signInThroughForm, tally, until } from './ops-lib.mjs';

const t = tally('load e2e');
const DURATION_S = 12;

const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/#/load`, { waitUntil: 'domcontentloaded' });
  const anonymous = await fetch(`${base}/load/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ scenario: 'smoke', rate_per_s: 20, duration_s: DURATION_S }),
  });
  const refusal = await anonymous.json().catch(() => ({}));
  t.check(anonymous.status === 401 && refusal.code === 'UNAUTHENTICATED',
    `a start without a token is refused (${anonymous.status} ${refusal.code})`);
  const idle = await (await fetchWithToken(`${base}/load/run`)).json();
  t.check(idle.state !== 'running', `and nothing runs (${idle.state})`);
  // What the page asks of the load runner, from the start of the run on.
  const asked = { run: 0, events: 0 };
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (path === '/load/run' && request.method() === 'GET') asked.run++;
    if (path === '/load/run/events') asked.events++;
  });
  await signInThroughForm(page);
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  const form = page.getByTestId('run-form');
  await form.getByRole('combobox', { name: 'Scenario' }).selectOption('smoke');
  await form.getByRole('textbox', { name: 'Rate (requests/s)' }).fill('20');
  await form.getByRole('textbox', { name: 'Duration (s)' }).fill(String(DURATION_S));
  await page.locator('[data-testid="run-form"]').waitFor({ timeout: 10000 });
  // The run stream is open once the runner answered (signed in); it carries the run.
  await until(async () => asked.events > 0, 10000, 100);
  await page.waitForTimeout(500);
  asked.run = 0;
  asked.events = 0;
  const startedAt = Date.now();
  await form.getByRole('button', { name: 'Start' }).click();
  await page.locator('[data-testid="run-status"][data-state="running"]').waitFor({ timeout: 10000 });
  t.pass('the smoke run started');

  const number = async (testId, attribute) => Number((await page.getByTestId(testId).getAttribute(attribute)) || 0);
  const nodesOps = await until(async () => (await number('nodes-total', 'data-ops')) > 0 && number('nodes-total', 'data-ops'), 20000);
  t.check(nodesOps > 0, `the nodes' throughput went above zero (${await number('nodes-total', 'data-ops')} ops/s)`);
  const k6Rps = await until(async () => (await number('k6-rps', 'data-value')) > 0, 20000);
  t.check(k6Rps, `k6's requests/s went above zero (${await number('k6-rps', 'data-value')}/s)`);
  const k6P99 = await until(async () => (await number('k6-p99', 'data-value')) > 0, 5000);
  t.check(k6P99, `k6's p99 is shown (${await number('k6-p99', 'data-value')} ms)`);
  // k6's `vus` gauge counts the VUs busy when it was sampled; at 20 requests/s
  // an open-model run often has none busy at that moment, so 0 is a true
  // reading. The view must show k6's figure, whatever it is; k6 first samples
  // it in the run's second second.
  const vusText = async () => (await page.getByTestId('k6-vus').textContent())?.trim() ?? '';
  await until(async () => /^\d+$/.test(await vusText()), 5000);
  const vus = await vusText();
  t.check(/^\d+$/.test(vus), `the view shows k6's VU count (${JSON.stringify(vus)})`);
  await screenshot(page, 'load-running');
  await checkNarrow(page, 'load', t);

  const ended = await until(async () => {
    const state = await page.getByTestId('run-status').getAttribute('data-state');
    return ['finished', 'failed', 'stopped'].includes(state) && state;
  }, (DURATION_S + 40) * 1000, 500);
  t.check(ended === 'finished' || ended === 'failed', `the run ended by itself (${ended})`);
  const followedMs = Date.now() - startedAt;
  t.check(
    asked.run === 0 && asked.events === 0,
    `the run's state came over one stream for ${(followedMs / 1000).toFixed(1)} s: ` +
      `${asked.run} GET /load/run and ${asked.events} new /load/run/events since the start`,
  );
  t.check(
    (await page.getByTestId('run-status').getAttribute('data-stream')) === 'live',
    'the end of the run came over the live stream',
  );
  // k6 ends its stream with its run; its last figures stay on view.
  t.check((await number('k6-p99', 'data-value')) > 0, `k6's last figures stay after the run (p99 ${await number('k6-p99', 'data-value')} ms)`);
  // The run acts with the token that started it: against a cluster that takes no request
  // without one, its checks pass only because k6 sends it.
  const checksFailed = Number((await page.getByTestId('k6-checks-failed').getAttribute('data-value')) || 1);
  t.check(checksFailed < 0.05, `k6's checks passed (failed ${(checksFailed * 100).toFixed(1)} %)`);
  const run = await (await fetchWithToken(`${base}/load/run`)).json();
  t.check(run.exit_code === 0 || run.exit_code === 99, `k6 exited ${run.exit_code} (0, or 99 for a crossed threshold)`);
  await screenshot(page, 'load');
} catch (e) {
  t.fail(e.message);
} finally {
  await browser.close();
}
t.report();
