// The Actions view against a real cluster behind Envoy, in Debian's Chromium:
//   1. removing a voter first says what it does to fault tolerance and asks to confirm;
//      once confirmed the member leaves (the view and GET /v1/cluster/members agree);
//   2. adding it back makes it a learner, shown as one in the Actions view and the
//      Cluster view (from the nodes' own status over the event stream);
//   3. it is promoted back to voter, and a snapshot on every member reports `done`.
// Env: STRATA_URL (the gateway serving the console), E2E_SCREENSHOT_DIR (optional).
import { base, checkNarrow, launch, screenshot, tally, until } from './ops-lib.mjs';

const t = tally('actions e2e');

async function members() {
  const response = await fetch(`${base}/v1/cluster/members`);
  return (await response.json()).members;
}

const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/#/actions`, { waitUntil: 'domcontentloaded' });
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  const before = await members();
  const status = await (await fetch(`${base}/v1/cluster/status`)).json();
  // A follower leaves, so the test never waits on an election.
  const leaving = before.find((m) => m.id !== status.leader_id && m.voter);
  const row = page.getByTestId(`member-row-${leaving.id}`);
  await row.waitFor({ timeout: 10000 });

  const form = page.getByTestId('membership-form');
  await form.getByRole('combobox', { name: 'Change' }).selectOption('remove');
  await form.getByRole('combobox', { name: 'Member' }).selectOption(String(leaving.id));
  await form.getByTestId('review-change').click();
  const summary = (await form.getByTestId('impact-summary').textContent()) ?? '';
  t.check(summary.includes('After this, one more failure loses quorum.'), `removal warns about quorum: "${summary}"`);
  t.check((await members()).length === before.length, 'nothing changed before confirming');
  await screenshot(page, 'actions-confirm-remove');
  await form.getByTestId('confirm-button').click();
  await row.waitFor({ state: 'detached', timeout: 15000 });
  t.check(!(await members()).some((m) => m.id === leaving.id), `node ${leaving.id} left the configuration`);

  await form.getByRole('combobox', { name: 'Change' }).selectOption('add');
  await form.getByRole('textbox', { name: 'Node id' }).fill(String(leaving.id));
  await form.getByRole('textbox', { name: 'Address (host:port)' }).fill(leaving.address);
  await form.getByTestId('review-change').click();
  await form.getByTestId('confirm-button').click();
  await page.locator(`[data-testid="member-row-${leaving.id}"][data-voter="false"][data-role="learner"]`).waitFor({ timeout: 15000 });
  t.pass(`node ${leaving.id} is back as a learner in the Actions view`);
  t.check((await members()).some((m) => m.id === leaving.id && !m.voter), 'the API lists it as a learner');
  await screenshot(page, 'actions-learner');

  await page.goto(`${base}/#/cluster`);
  await page.locator(`[data-testid="node-row-${leaving.id}"][data-role="learner"]`).waitFor({ timeout: 15000 });
  t.pass(`the Cluster view shows node ${leaving.id} as a learner`);
  await screenshot(page, 'cluster-learner');

  // Restore three voters (a learner may need a moment to catch up: 503 means retry).
  const promoted = await until(async () => {
    const response = await fetch(`${base}/v1/cluster/members/${leaving.id}/promote`, { method: 'POST' });
    return response.status === 200;
  }, 20000, 500);
  t.check(promoted, `node ${leaving.id} promoted back to voter`);

  await page.goto(`${base}/#/actions`);
  await page.locator(`[data-testid="member-row-${leaving.id}"][data-voter="true"]`).waitFor({ timeout: 15000 });
  const maintenance = page.getByTestId('maintenance-form');
  await maintenance.getByRole('button', { name: 'Snapshot' }).click();
  await maintenance.getByTestId('maintenance-result').waitFor({ timeout: 15000 });
  const outcomes = await maintenance.locator('[data-testid^="outcome-"]').evaluateAll((items) =>
    items.map((item) => item.getAttribute('data-outcome')),
  );
  t.check(outcomes.length === before.length && outcomes.every((o) => o === 'done'), `a snapshot on every member: ${outcomes}`);
  await screenshot(page, 'actions');
  await checkNarrow(page, 'actions', t);
} catch (e) {
  t.fail(e.message);
} finally {
  await browser.close();
}
t.report();
