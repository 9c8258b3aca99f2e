import { sendJson } from '../../../api/send';
import type {
  CompactRequest,
  CompactResult,
  SnapshotRequest,
  SnapshotResult,
  SplitRangeRequest,
  SplitRangeResult,
  TransferLeaderRequest,
  TransferLeaderResult,
} from './types';

export function transferLeader(targetId: number): Promise<TransferLeaderResult> {
  const body: TransferLeaderRequest = { target_id: targetId };
  return sendJson<TransferLeaderResult>('POST', '/v1/cluster/leader', body);
}

/** POST /v1/cluster/compact on the listed members (every member when empty). */
export function compact(nodeIds: number[]): Promise<CompactResult> {
  const body: CompactRequest = { node_ids: nodeIds };
  return sendJson<CompactResult>('POST', '/v1/cluster/compact', body);
}

/** POST /v1/cluster/snapshot on the listed members (every member when empty). */
export function snapshot(nodeIds: number[]): Promise<SnapshotResult> {
  const body: SnapshotRequest = { node_ids: nodeIds };
  return sendJson<SnapshotResult>('POST', '/v1/cluster/snapshot', body);
}

/** POST /v1/cluster/ranges/split: the range holding `key` splits there. */
export function splitRange(key: string): Promise<SplitRangeResult> {
  const body: SplitRangeRequest = { key, encoding: 'utf8' };
  return sendJson<SplitRangeResult>('POST', '/v1/cluster/ranges/split', body);
}
