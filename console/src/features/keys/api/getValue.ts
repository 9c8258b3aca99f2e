import { queryOptions } from '@tanstack/react-query';
import { sendJson } from '../../../api/send';
import { bytesFromBase64, keyPath } from './bytes';
import type { GetResult } from './types';

export interface StoredValue {
  value: Uint8Array;
  /** The raft index the read was served at, and who served it. */
  index: number;
  nodeId: number;
  /** The raft indexes of the write that created the key and of the one that last put it. */
  createIndex: number;
  modIndex: number;
  /** The lease the key is under; 0 for none. */
  lease: number;
}

/** GET /v1/kv/{key} (linearizable), the value decoded from base64. */
export async function getValue(key: Uint8Array, signal?: AbortSignal): Promise<StoredValue> {
  const result = await sendJson<GetResult>('GET', `/v1/kv/${keyPath(key)}?encoding=base64`, undefined, signal);
  return {
    value: bytesFromBase64(result.value),
    index: result.index,
    nodeId: result.node_id,
    createIndex: result.create_index,
    modIndex: result.mod_index,
    lease: result.lease,
  };
}

export function valueQuery(key: Uint8Array) {
  return queryOptions({
    queryKey: ['keys', 'value', keyPath(key)] as const,
    queryFn: ({ signal }) => getValue(key, signal),
    retry: false,
  });
}
