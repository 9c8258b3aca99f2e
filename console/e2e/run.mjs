// Runs every end-to-end file of this folder (*.e2e.mjs), one after another in name
// order, against the same cluster; fails when any of them fails. Each file leaves the
// cluster whole (every node it killed started again).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.e2e.mjs'))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .sort();
let failed = [];
for (const file of files) {
  console.log(`e2e: ${file}`);
  const result = spawnSync(process.execPath, [join(here, file)], { stdio: 'inherit' });
  if (result.status !== 0) failed.push(file);
}
console.log(`e2e: ${files.length - failed.length} of ${files.length} files passed${failed.length ? `; failed: ${failed.join(', ')}` : ''}`);
process.exitCode = failed.length > 0 ? 1 : 0;
