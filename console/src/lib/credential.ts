// The operator's token: kept in localStorage under `strata.token`, sent by the API layer
// (src/api/http.ts, src/api/send.ts) as `authorization: Bearer <token>` on every fetch,
// and decoded here to say who is signed in. Decoding only: the nodes verify the
// signature, the issuer and the expiry, and answer 401 or 403 when they refuse.
// Server-sent event streams carry it too (src/lib/openEventSource.ts).

import { useSyncExternalStore } from 'react';

export const TOKEN_KEY = 'strata.token';

export type Role = 'read' | 'write' | 'admin';
const ROLES: readonly Role[] = ['read', 'write', 'admin'];

/** What the console reads from a token's payload (the middle part of the JWT). */
export interface TokenClaims {
  /** Who the token names. */
  sub: string;
  role: Role;
  /** Expiry, unix seconds. */
  exp: number;
  iss?: string;
}

export type TokenCheck = { ok: true; claims: TokenClaims } | { ok: false; error: string };

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Decodes one base64url part (no padding) as UTF-8 text; null when it is not base64url. */
function base64UrlText(part: string): string | null {
  if (!BASE64URL.test(part) || part.length % 4 === 1) return null;
  const base64 = part.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (part.length % 4)) % 4);
  try {
    const binary = atob(base64);
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/**
 * Reads a token's claims without verifying it: three base64url parts, a JSON header, a
 * JSON payload with `sub`, `role` (read, write or admin) and `exp`. Expiry is not judged
 * here ({@link checkToken} does), so a stored token that has expired still says whose it was.
 */
export function decodeToken(token: string): TokenCheck {
  const parts = token.trim().split('.');
  if (parts.length !== 3 || parts.some((p) => p === '')) {
    return { ok: false, error: `A token has three parts separated by dots (header.payload.signature); this has ${parts.length}.` };
  }
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  if (!BASE64URL.test(signaturePart)) return { ok: false, error: 'The signature (third part) is not base64url.' };
  const headerText = base64UrlText(headerPart);
  if (headerText === null || jsonObject(headerText) === null) {
    return { ok: false, error: 'The header (first part) is not base64url-encoded JSON.' };
  }
  const payloadText = base64UrlText(payloadPart);
  const payload = payloadText === null ? null : jsonObject(payloadText);
  if (payload === null) return { ok: false, error: 'The payload (second part) is not base64url-encoded JSON.' };
  const { sub, role, exp, iss } = payload;
  if (typeof sub !== 'string' || sub === '') return { ok: false, error: 'The payload has no `sub` (who the token is for).' };
  if (typeof role !== 'string' || !(ROLES as readonly string[]).includes(role)) {
    return { ok: false, error: `The payload's \`role\` must be read, write or admin; it is ${JSON.stringify(role ?? null)}.` };
  }
  if (typeof exp !== 'number' || !Number.isFinite(exp)) {
    return { ok: false, error: 'The payload has no `exp` (expiry in unix seconds).' };
  }
  const claims: TokenClaims = { sub, role: role as Role, exp };
  if (typeof iss === 'string') claims.iss = iss;
  return { ok: true, claims };
}

/** {@link decodeToken}, and the token must not have expired at `nowMs`. */
export function checkToken(token: string, nowMs: number = Date.now()): TokenCheck {
  const decoded = decodeToken(token);
  if (!decoded.ok) return decoded;
  if (decoded.claims.exp * 1000 <= nowMs) {
    return {
      ok: false,
      error: `The token expired at ${new Date(decoded.claims.exp * 1000).toISOString()}; ask for a new one.`,
    };
  }
  return decoded;
}

// --- the stored token ---------------------------------------------------------------

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

/** The stored token, or null (signed out, or storage unavailable). */
export function storedToken(): string | null {
  try {
    const token = window.localStorage.getItem(TOKEN_KEY);
    return token === null || token.trim() === '' ? null : token.trim();
  } catch {
    return null;
  }
}

/** Keeps `token` (already checked by the caller) and tells every subscriber. */
export function signIn(token: string): void {
  window.localStorage.setItem(TOKEN_KEY, token.trim());
  notify();
}

export function signOut(): void {
  window.localStorage.removeItem(TOKEN_KEY);
  notify();
}

/**
 * Calls `listener` whenever the token changes, here or in another tab of the console
 * (the `storage` event); returns the unsubscribe function.
 */
export function subscribeToken(listener: () => void): () => void {
  listeners.add(listener);
  const onStorage = (event: StorageEvent) => {
    if (event.key === TOKEN_KEY || event.key === null) listener();
  };
  window.addEventListener('storage', onStorage);
  return () => {
    listeners.delete(listener);
    window.removeEventListener('storage', onStorage);
  };
}

/** The headers that carry `token` (by default the stored one); none when there is none. */
export function credentialHeaders(token: string | null = storedToken()): Record<string, string> {
  return token === null ? {} : { Authorization: `Bearer ${token}` };
}

/** Who is signed in: the stored token and its claims, or `anonymous` when there is none. */
export type Credential =
  | { kind: 'anonymous' }
  | { kind: 'token'; token: string; claims: TokenClaims }
  | { kind: 'unreadable'; token: string; error: string };

export function credentialOf(token: string | null): Credential {
  if (token === null) return { kind: 'anonymous' };
  const decoded = decodeToken(token);
  return decoded.ok ? { kind: 'token', token, claims: decoded.claims } : { kind: 'unreadable', token, error: decoded.error };
}

/** The stored token as React state: components re-render on sign-in and sign-out. */
export function useCredential(): Credential {
  const token = useSyncExternalStore(subscribeToken, storedToken, () => null);
  return credentialOf(token);
}
