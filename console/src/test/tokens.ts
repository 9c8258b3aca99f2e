// Tokens shaped like the ones `strata auth token` makes (header.payload.signature, each
// base64url without padding), for the tests of the sign-in control and the API layer.
// The signature is filler: the console never verifies one.

export function base64Url(text: string): string {
  const bytes = new TextEncoder().encode(text);
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const HEADER = base64Url(JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid: 'test' }));
const SIGNATURE = base64Url('not a real signature, sixty-four bytes long in the real ones....');

/** A token whose payload is `payload` as JSON (any shape, for the malformed cases too). */
export function tokenWith(payload: unknown): string {
  return `${HEADER}.${base64Url(JSON.stringify(payload))}.${SIGNATURE}`;
}

/** A well-formed token for `sub` with `role`, expiring `ttlSeconds` from now (negative: expired). */
export function makeToken(sub: string, role: string, ttlSeconds = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  return tokenWith({ sub, role, iss: 'strata', iat: now, exp: now + ttlSeconds });
}
