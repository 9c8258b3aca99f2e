// The tokens of STRATA_TOKEN_FILE (admin) and STRATA_READ_TOKEN_FILE (read), shared by the
// end-to-end files (lib.mjs, ops-lib.mjs).
import { readFileSync } from 'node:fs';

/**
 * The admin token from the file STRATA_TOKEN_FILE names (`strata-cluster up` writes one to
 * `<run-dir>/admin.token`); null when it is not set. Admin actions (membership, leadership,
 * compaction, snapshots, load runs) need it: requests without a token get the nodes' anonymous role.
 */
export const adminToken = process.env.STRATA_TOKEN_FILE
  ? readFileSync(process.env.STRATA_TOKEN_FILE, 'utf8').trim()
  : null;

/** The admin token; fails when STRATA_TOKEN_FILE is not set. */
export function requireAdminToken() {
  if (!adminToken) throw new Error('STRATA_TOKEN_FILE is required: the file with an admin token (<run-dir>/admin.token)');
  return adminToken;
}

/** The header that makes a plain fetch run as admin. */
export function adminHeaders() {
  return { authorization: `Bearer ${requireAdminToken()}` };
}

/** The read-role token from STRATA_READ_TOKEN_FILE; fails when it is not set. */
export function requireReadToken() {
  const file = process.env.STRATA_READ_TOKEN_FILE;
  if (!file) throw new Error('STRATA_READ_TOKEN_FILE is required: the file with a read-role token');
  return readFileSync(file, 'utf8').trim();
}

/**
 * A fetch as a client of the cluster with the admin token: the ops checks run against a
 * cluster that takes no request without one, as compose and Kubernetes run it.
 */
export function fetchWithToken(url, init = {}) {
  return fetch(url, { ...init, headers: { ...(init.headers ?? {}), ...adminHeaders() } });
}
