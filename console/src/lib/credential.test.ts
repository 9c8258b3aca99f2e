import { base64Url, makeToken, tokenWith } from '../test/tokens';
import { checkToken, credentialHeaders, decodeToken, signIn, signOut, storedToken, subscribeToken, TOKEN_KEY } from './credential';

// A token as `strata-cluster up` wrote it to admin.token (payload: sub admin, role admin,
// iss strata, exp 1798398622 = 2026-12-27); its signature is not checked here.
const LAUNCHER_TOKEN =
  'eyJ0eXAiOiJKV1QiLCJhbGciOiJFZERTQSIsImtpZCI6IjkxZTBkZDU3N2U5ZmQ0ZDkifQ.' +
  'eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJhZG1pbiIsImlzcyI6InN0cmF0YSIsImlhdCI6MTc5NTgwNjYyMiwiZXhwIjoxNzk4Mzk4NjIyfQ.' +
  'c2lnbmF0dXJl';

function errorOf(token: string, now = Date.now()): string {
  const checked = checkToken(token, now);
  if (checked.ok) throw new Error('the token was accepted');
  return checked.error;
}

describe('decodeToken and checkToken', () => {
  it('reads sub, role, exp and iss from the payload of a launcher-made token', () => {
    const checked = checkToken(LAUNCHER_TOKEN, Date.UTC(2026, 10, 27));
    expect(checked).toEqual({ ok: true, claims: { sub: 'admin', role: 'admin', exp: 1798398622, iss: 'strata' } });
  });

  it('decodes UTF-8 and base64url characters (- and _) in the payload', () => {
    // "ü?>" encodes with '-' and '_' in base64url: a plain atob of the part would throw.
    const token = tokenWith({ sub: 'jürgen?>~', role: 'write', exp: 4102444800 });
    expect(token.split('.')[1]).toMatch(/[-_]/);
    expect(decodeToken(token)).toEqual({ ok: true, claims: { sub: 'jürgen?>~', role: 'write', exp: 4102444800 } });
  });

  it('refuses what is not three base64url parts', () => {
    expect(errorOf('abc.def')).toMatch(/three parts.*this has 2/);
    expect(errorOf('a.b.c.d')).toMatch(/this has 4/);
    expect(errorOf('..')).toMatch(/three parts/);
    expect(errorOf(`${base64Url('{}')}.${base64Url('{"sub":"a"}')}.sig+nature`)).toMatch(/signature.*not base64url/);
    expect(errorOf(`not-json.${base64Url('{}')}.sig`)).toMatch(/header.*not base64url-encoded JSON/);
    expect(errorOf(`${base64Url('{}')}.pay load.sig`)).toMatch(/payload.*not base64url-encoded JSON/);
  });

  it('names the missing or wrong claim', () => {
    expect(errorOf(tokenWith({ role: 'admin', exp: 4102444800 }))).toMatch(/no `sub`/);
    expect(errorOf(tokenWith({ sub: 'a', role: 'root', exp: 4102444800 }))).toMatch(/read, write or admin; it is "root"/);
    expect(errorOf(tokenWith({ sub: 'a', exp: 4102444800 }))).toMatch(/it is null/);
    expect(errorOf(tokenWith({ sub: 'a', role: 'read' }))).toMatch(/no `exp`/);
    expect(errorOf(tokenWith({ sub: 'a', role: 'read', exp: '4102444800' }))).toMatch(/no `exp`/);
    expect(errorOf(tokenWith(['sub', 'role']))).toMatch(/payload.*not base64url-encoded JSON/);
  });

  it('refuses an expired token but still decodes whose it was', () => {
    const expired = makeToken('ops', 'admin', -60);
    expect(errorOf(expired)).toMatch(/expired at .*ask for a new one/);
    expect(decodeToken(expired)).toMatchObject({ ok: true, claims: { sub: 'ops', role: 'admin' } });
    // Expiry is exact to the second: one second before it, the token is good.
    expect(checkToken(tokenWith({ sub: 'a', role: 'read', exp: 1000 }), 999_000).ok).toBe(true);
    expect(checkToken(tokenWith({ sub: 'a', role: 'read', exp: 1000 }), 1_000_000).ok).toBe(false);
  });
});

describe('the stored token', () => {
  it('is kept under strata.token, sent as a bearer header, and forgotten on sign-out', () => {
    expect(credentialHeaders()).toEqual({});
    const token = makeToken('ops', 'admin');
    const changes = vi.fn();
    const unsubscribe = subscribeToken(changes);
    signIn(`  ${token}\n`);
    expect(window.localStorage.getItem(TOKEN_KEY)).toBe(token);
    expect(storedToken()).toBe(token);
    expect(credentialHeaders()).toEqual({ Authorization: `Bearer ${token}` });
    signOut();
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
    expect(credentialHeaders()).toEqual({});
    expect(changes).toHaveBeenCalledTimes(2);
    unsubscribe();
    signIn(token);
    expect(changes).toHaveBeenCalledTimes(2);
  });

  it('follows a sign-in in another tab (the storage event)', () => {
    const changes = vi.fn();
    const unsubscribe = subscribeToken(changes);
    window.dispatchEvent(new StorageEvent('storage', { key: 'something.else' }));
    expect(changes).not.toHaveBeenCalled();
    window.dispatchEvent(new StorageEvent('storage', { key: TOKEN_KEY }));
    expect(changes).toHaveBeenCalledTimes(1);
    unsubscribe();
  });
});
