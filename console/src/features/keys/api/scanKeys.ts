import { queryOptions } from '@tanstack/react-query';
import { sendJson } from '../../../api/send';
import { base64FromBytes, bytesFromBase64, bytesFromText } from './bytes';
import type { ScanResult } from './types';

export const PAGE_SIZE = 25;

export interface KeyPage {
  keys: Uint8Array[];
  /** Where the next page starts; null on the last page. */
  nextPageToken: string | null;
}

/** GET /v1/kv?prefix=…&keys_only=true, one page, keys decoded from base64. */
export async function scanKeys(
  prefix: string,
  pageToken: string | null,
  signal?: AbortSignal,
): Promise<KeyPage> {
  const query = new URLSearchParams({ keys_only: 'true', encoding: 'base64', limit: String(PAGE_SIZE) });
  if (prefix !== '') query.set('prefix', base64FromBytes(bytesFromText(prefix)));
  if (pageToken) query.set('page_token', pageToken);
  const result = await sendJson<ScanResult>('GET', `/v1/kv?${query.toString()}`, undefined, signal);
  return {
    keys: result.kvs.map((kv) => bytesFromBase64(kv.key)),
    nextPageToken: result.next_page_token ?? null,
  };
}

export function keyPageQuery(prefix: string, pageToken: string | null) {
  return queryOptions({
    queryKey: ['keys', 'scan', prefix, pageToken] as const,
    queryFn: ({ signal }) => scanKeys(prefix, pageToken, signal),
    retry: false,
  });
}
