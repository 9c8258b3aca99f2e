// The admin contract's payloads, named from the generated OpenAPI types.
import type { components } from '../../../api/generated/schema';

type Schemas = components['schemas'];

export type Members = Schemas['Members'];
export type Member = Schemas['Member'];
export type ClusterStatus = Schemas['ClusterStatus'];
export type NodeStatus = Schemas['NodeStatus'];
export type RaftEvent = Schemas['RaftEvent'];
export type AddMemberRequest = Schemas['AddMemberRequest'];
export type TransferLeaderRequest = Schemas['TransferLeaderRequest'];
export type TransferLeaderResult = Schemas['TransferLeaderResult'];
export type SplitRangeRequest = Schemas['SplitRangeRequest'];
export type SplitRangeResult = Schemas['SplitRangeResult'];
export type CompactRequest = Schemas['CompactRequest'];
export type CompactResult = Schemas['CompactResult'];
export type SnapshotRequest = Schemas['SnapshotRequest'];
export type SnapshotResult = Schemas['SnapshotResult'];
