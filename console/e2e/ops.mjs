// Runs the Keys, Leases, transaction, Actions, Load and range split checks one after
// another (each even when an earlier one failed) and fails when any failed; the split is
// last (it leaves the cluster with two ranges). Env: as each check's.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let failed = 0;
for (const check of ['keys.ops.mjs', 'leases.ops.mjs', 'txn.ops.mjs', 'actions.ops.mjs', 'load.ops.mjs', 'ranges.ops.mjs']) {
  const run = spawnSync(process.execPath, [join(here, check)], { stdio: 'inherit' });
  if (run.status !== 0) failed++;
}
process.exitCode = failed > 0 ? 1 : 0;
