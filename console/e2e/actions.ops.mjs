// The Actions view against a real cluster behind Envoy that takes no request without a
// token, in Debian's Chromium:
//   0. signed in with a read-role token, the header names the read role and the view says
//      the actions need admin; a confirmed removal is refused (403 PERMISSION_DENIED, by the
//      gateway, which checks roles itself, shown as it gave it, with a hint about the role) and the member is still listed by
//      GET /v1/cluster/members; then the check signs in through the header's form with the
//      admin token, and the header names the admin role;
//   1. removing a voter first says what it does to fault tolerance and asks to confirm;
//      once confirmed (again, as admin now) the member leaves (the view and
//      GET /v1/cluster/members agree), and the Cluster view no longer lists it
//      (screenshot cluster-removed);
//   2. adding it back makes it a learner, shown as one in the Actions view and the
//      Cluster view (from the nodes' own status over the event stream);
//   3. it is promoted back to voter, and a snapshot on every member reports `done`.
// Env: STRATA_URL (the gateway serving the console), STRATA_TOKEN_FILE (the admin token's
// file), STRATA_READ_TOKEN_FILE (a read-role token's file), E2E_SCREENSHOT_DIR (optional).
import {
  adminHeaders, base, checkNarrow, fetchWithToken, launch, requireReadToken, screenshot, signInThroughForm, tally, until,
} from './ops-lib.mjs';

const t = tally('actions e2e');

async function members() {
  const response = await fetchWithToken(`${base}/v1/cluster/members`);
  return (await response.json()).members;
}

const browser = await launch();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${base}/#/actions`, { waitUntil: 'domcontentloaded' });
  await signInThroughForm(page, requireReadToken(), 'read');
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  const before = await members();
  const status = await (await fetchWithToken(`${base}/v1/cluster/status`)).json();
  // A follower leaves, so the test never waits on an election.
  const leaving = before.find((m) => m.id !== status.leader_id && m.voter);
  const row = page.getByTestId(`member-row-${leaving.id}`);
  await row.waitFor({ timeout: 10000 });

  const credential = page.getByTestId('credential');
  t.check((await credential.getAttribute('data-role')) === 'read', 'signed in with a read token, the header says read');
  const needsAdmin = page.getByTestId('admin-needed');
  const needsText = (await needsAdmin.textContent()) ?? '';
  t.check(
    needsText.includes('These actions need the admin role: sign in with an admin token.') && needsText.includes('with the read role'),
    `with the read role, the view says the actions need the admin role: "${needsText}"`,
  );

  const form = page.getByTestId('membership-form');
  await form.getByRole('combobox', { name: 'Change' }).selectOption('remove');
  await form.getByRole('combobox', { name: 'Member' }).selectOption(String(leaving.id));
  await form.getByTestId('review-change').click();
  const summary = (await form.getByTestId('impact-summary').textContent()) ?? '';
  t.check(summary.includes('After this, one more failure loses quorum.'), `removal warns about quorum: "${summary}"`);
  t.check((await members()).length === before.length, 'nothing changed before confirming');
  await screenshot(page, 'actions-confirm-remove');

  // With the read role, the request still goes: the node refuses it.
  await form.getByTestId('confirm-button').click();
  const refusal = form.locator('[data-testid="api-error"][data-code="PERMISSION_DENIED"][data-status="403"]');
  await refusal.waitFor({ timeout: 10000 });
  const refusalText = (await refusal.textContent()) ?? '';
  // The gateway checks roles itself (it has the cluster's keys), so the refusal is its own.
  t.check(refusalText.includes('gateway: RBAC: access denied'), `the gateway's 403 is shown as it gave it: "${refusalText}"`);
  t.check(
    (await refusal.getByTestId('auth-hint').textContent())?.includes('is not enough for this'),
    'the refusal says the role is not enough',
  );
  t.check((await members()).some((m) => m.id === leaving.id), `refused, node ${leaving.id} is still a member (GET)`);
  t.check(await row.isVisible(), `refused, the view still lists node ${leaving.id}`);
  await screenshot(page, 'auth-refused-read-role');

  const header = await signInThroughForm(page);
  t.check(header.includes('admin'), `signed in through the form, the header shows the admin role: "${header}"`);
  await needsAdmin.waitFor({ state: 'detached', timeout: 5000 });
  t.pass('signed in as admin, the view no longer says admin is needed');
  await screenshot(page, 'auth-signed-in');

  // Switching tokens signed the view out for a moment (every request refused 401), so the
  // change is reviewed again; confirming it now sends the removal with the admin token.
  await form.getByRole('combobox', { name: 'Change' }).selectOption('remove');
  await form.getByRole('combobox', { name: 'Member' }).selectOption(String(leaving.id));
  await form.getByTestId('review-change').click();
  await form.getByTestId('confirm-button').click();
  await row.waitFor({ state: 'detached', timeout: 15000 });
  t.check(!(await members()).some((m) => m.id === leaving.id), `node ${leaving.id} left the configuration`);
  t.check((await form.getByTestId('api-error').count()) === 0, 'the refusal is gone once the change succeeded');

  // The Cluster view (the members' own status over the event stream) no longer lists it.
  // The view's stream goes to any node the gateway knows. The removed node runs on, but
  // once it has applied its removal it ends a stream it serves and refuses a new one (503,
  // which the gateway retries on another node), so the view reconnects to a member.
  await page.goto(`${base}/#/cluster`);
  await page.locator('[data-testid="stream-status"][data-state="live"]').waitFor({ timeout: 15000 });
  await page.locator('[data-testid^="node-row-"]').first().waitFor({ timeout: 15000 });
  const gone = await until(
    async () => (await page.locator(`[data-testid="node-row-${leaving.id}"]`).count()) === 0,
    10000,
    200,
  );
  const listed = await page
    .locator('[data-testid^="node-row-"]')
    .evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-testid').replace('node-row-', ''))));
  t.check(gone, `the Cluster view no longer lists node ${leaving.id} (it lists ${JSON.stringify(listed)})`);
  t.check(
    listed.length === before.length - 1 && before.every((m) => m.id === leaving.id || listed.includes(m.id)),
    `the Cluster view lists every other member: ${JSON.stringify(listed)}`,
  );
  t.check(
    (await page.getByTestId('cluster-healthy').textContent())?.includes(`/ ${before.length - 1}`),
    `the Cluster view counts ${before.length - 1} members: "${await page.getByTestId('cluster-healthy').textContent()}"`,
  );
  await screenshot(page, 'cluster-removed');
  await page.goto(`${base}/#/actions`);
  await page.getByTestId('membership-form').waitFor({ timeout: 15000 });

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
    const response = await fetchWithToken(`${base}/v1/cluster/members/${leaving.id}/promote`, {
      method: 'POST',
      headers: adminHeaders(),
    });
    return response.status === 200;
  }, 20000, 500);
  t.check(promoted, `node ${leaving.id} promoted back to voter`);

  await page.goto(`${base}/#/actions`);
  // A reload keeps the sign-in: the token stays in localStorage.
  await page.reload({ waitUntil: 'domcontentloaded' });
  await page.locator(`[data-testid="member-row-${leaving.id}"][data-voter="true"]`).waitFor({ timeout: 15000 });
  t.check(
    (await page.getByTestId('credential').getAttribute('data-role')) === 'admin',
    'after a reload the console is still signed in as admin',
  );
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
