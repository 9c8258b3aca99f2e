/** The cluster's server-sent event stream (relative: same origin as the console). */
export const CLUSTER_EVENTS_URL = '/v1/cluster/events';

/** SSE event names on that stream, as in the contract. */
export const STATUS_EVENT = 'status';
export const RAFT_EVENT = 'raft';
export const STATS_EVENT = 'stats';
export const RANGE_EVENT = 'range';
