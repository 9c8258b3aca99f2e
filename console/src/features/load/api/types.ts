// The nodes' stats payloads, named from the generated OpenAPI types.
import type { components } from '../../../api/generated/schema';

type Schemas = components['schemas'];

export type ClusterStats = Schemas['ClusterStats'];
export type MemberStats = Schemas['MemberStats'];
export type NodeStats = Schemas['NodeStats'];
export type RequestCount = Schemas['RequestCount'];
export type RouteLatency = Schemas['RouteLatency'];
export type Histogram = Schemas['Histogram'];
export type SlowRequest = Schemas['SlowRequest'];
