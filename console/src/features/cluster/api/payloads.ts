import type {
  ClusterStatus,
  NodeRole,
  NodeStatus,
  RaftEvent,
  RaftEventKind,
  RangeEvent,
  RangeStatus,
} from '../../../api/types';

// The live view must survive a half-written or unexpected frame without crashing the
// page, so every payload that arrives over the wire is checked against the contract
// before it reaches state. The types come from the generated schema; these guards only
// check what the contract promises.

const ROLES: readonly NodeRole[] = ['leader', 'follower', 'candidate', 'learner', 'unknown'];
const RAFT_EVENT_KINDS: readonly RaftEventKind[] = [
  'leader_changed',
  'role_changed',
  'election_started',
  'membership_changed',
  'snapshot_sent',
  'snapshot_received',
  'snapshot_installed',
  'storage_failed',
];

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

function isRole(value: unknown): value is NodeRole {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

function parseNodeStatus(value: unknown): NodeStatus | null {
  if (!isObject(value)) return null;
  const { id, address, role, term, commit_index, applied_index, healthy, leader_id, error, proven, leaving, cluster_id } = value;
  if (
    !isCount(id) ||
    typeof address !== 'string' ||
    !isRole(role) ||
    !isCount(term) ||
    !isCount(commit_index) ||
    !isCount(applied_index) ||
    typeof healthy !== 'boolean' ||
    !isCount(leader_id) ||
    (proven !== undefined && typeof proven !== 'boolean') ||
    (leaving !== undefined && typeof leaving !== 'boolean') ||
    (cluster_id !== undefined && typeof cluster_id !== 'string')
  ) {
    return null;
  }
  // A node that does not say (one older than the fields) is taken as voting and staying.
  const node: NodeStatus = {
    id,
    address,
    role,
    term,
    commit_index,
    applied_index,
    healthy,
    leader_id,
    proven: proven ?? true,
    leaving: leaving ?? false,
    cluster_id: cluster_id ?? '',
  };
  if (typeof error === 'string' && error !== '') node.error = error;
  return node;
}

function isIdList(value: unknown): value is number[] {
  return Array.isArray(value) && value.every(isCount);
}

/** One range of a ClusterStatus, or null when malformed. */
function parseRangeStatus(value: unknown): RangeStatus | null {
  if (!isObject(value)) return null;
  const { id, start, end, encoding, voters, learners, leader_id, term } = value;
  if (
    !isCount(id) ||
    typeof start !== 'string' ||
    typeof end !== 'string' ||
    (encoding !== 'utf8' && encoding !== 'base64') ||
    !isIdList(voters) ||
    !isIdList(learners) ||
    !isCount(leader_id) ||
    !isCount(term)
  ) {
    return null;
  }
  return { id, start, end, encoding, voters, learners, leader_id, term };
}

/** A ClusterStatus (GET /v1/cluster/status, SSE `status`), or null when malformed. */
export function parseClusterStatus(value: unknown): ClusterStatus | null {
  if (!isObject(value)) return null;
  const { leader_id, term, nodes, cluster_id, ranges } = value;
  if (!isCount(leader_id) || !isCount(term) || !Array.isArray(nodes)) return null;
  if (cluster_id !== undefined && typeof cluster_id !== 'string') return null;
  if (ranges !== undefined && !Array.isArray(ranges)) return null;
  const parsed: NodeStatus[] = [];
  for (const raw of nodes) {
    const node = parseNodeStatus(raw);
    if (!node) return null;
    parsed.push(node);
  }
  const parsedRanges: RangeStatus[] = [];
  for (const raw of ranges ?? []) {
    const range = parseRangeStatus(raw);
    if (!range) return null;
    parsedRanges.push(range);
  }
  return { leader_id, term, cluster_id: cluster_id ?? '', nodes: parsed, ranges: parsedRanges };
}

/** A RaftEvent (SSE `raft`), or null when malformed. */
export function parseRaftEvent(value: unknown): RaftEvent | null {
  if (!isObject(value)) return null;
  const { kind, node_id, term, leader_id, role, at_ms, duration_ms, detail } = value;
  if (
    typeof kind !== 'string' ||
    !(RAFT_EVENT_KINDS as readonly string[]).includes(kind) ||
    !isCount(node_id) ||
    !isCount(term) ||
    !isCount(leader_id) ||
    !isRole(role) ||
    !isCount(at_ms) ||
    !isCount(duration_ms) ||
    typeof detail !== 'string'
  ) {
    return null;
  }
  return { kind: kind as RaftEventKind, node_id, term, leader_id, role, at_ms, duration_ms, detail };
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

/** The `data:` of an SSE `status` event, or null when it is not a valid ClusterStatus. */
export function parseStatusEventData(data: string): ClusterStatus | null {
  return parseClusterStatus(parseJson(data));
}

/** A RangeEvent (SSE `range`), or null when malformed. */
export function parseRangeEvent(value: unknown): RangeEvent | null {
  if (!isObject(value)) return null;
  const { kind, range, node_id, leader_id, term, parent, start, end, encoding, at_ms } = value;
  if (
    (kind !== 'split' && kind !== 'leader_changed') ||
    !isCount(range) ||
    !isCount(node_id) ||
    !isCount(leader_id) ||
    !isCount(term) ||
    !isCount(parent) ||
    typeof start !== 'string' ||
    typeof end !== 'string' ||
    (encoding !== 'utf8' && encoding !== 'base64') ||
    !isCount(at_ms)
  ) {
    return null;
  }
  return { kind, range, node_id, leader_id, term, parent, start, end, encoding, at_ms };
}

/** The `data:` of an SSE `range` event, or null when it is not a valid RangeEvent. */
export function parseRangeEventData(data: string): RangeEvent | null {
  return parseRangeEvent(parseJson(data));
}

/** The `data:` of an SSE `raft` event, or null when it is not a valid RaftEvent. */
export function parseRaftEventData(data: string): RaftEvent | null {
  return parseRaftEvent(parseJson(data));
}
