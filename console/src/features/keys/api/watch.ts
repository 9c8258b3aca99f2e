// GET /v1/watch: the changes under a prefix, as server-sent events. The console asks
// for base64 (no byte lost to UTF-8) and resumes a lost stream from the index after the
// last one it was sent, so the feed has no gap and no repeat.
import type { ApiErrorBody } from '../../../api/types';
import { base64FromBytes, bytesFromBase64, bytesFromText } from './bytes';
import type { WatchChanges, WatchProgress } from './types';

/** Quiet interval between the server's progress events. */
export const WATCH_PROGRESS_MS = 5000;

export interface KeyChange {
  index: number;
  type: 'put' | 'delete';
  key: Uint8Array;
  /** The value put; null for a delete. */
  value: Uint8Array | null;
}

/** The watch of every key under `prefix`, from raft index `fromIndex` (null: from now). */
export function watchUrl(prefix: string, fromIndex: number | null): string {
  const query = new URLSearchParams({ encoding: 'base64', progress_ms: String(WATCH_PROGRESS_MS) });
  if (prefix !== '') query.set('prefix', base64FromBytes(bytesFromText(prefix)));
  if (fromIndex !== null) query.set('from_index', String(fromIndex));
  return `/v1/watch?${query.toString()}`;
}

const decode = (text: string, encoding: WatchChanges['encoding']) =>
  encoding === 'base64' ? bytesFromBase64(text) : bytesFromText(text);

/** A `changes` event's data: one raft index's changes, in the order it made them. */
export function parseChanges(data: string): KeyChange[] {
  const body = JSON.parse(data) as WatchChanges;
  return body.changes.map((c) => ({
    index: body.index,
    type: c.type,
    key: decode(c.key, body.encoding),
    value: c.value === undefined ? null : decode(c.value, body.encoding),
  }));
}

/** A `progress` event's data: everything through this index was sent. */
export function parseProgress(data: string): number {
  return (JSON.parse(data) as WatchProgress).index;
}

/** An `ended` event's data: why the server ended the watch. */
export function parseWatchEnd(data: string): ApiErrorBody {
  return JSON.parse(data) as ApiErrorBody;
}
