// Names for the API's schemas, taken from the generated OpenAPI types so that the
// console can never drift from the contract. Regenerate with `npm run gen:api`;
// never type an API payload by hand.
import type { components, paths } from './generated/schema';

type Schemas = components['schemas'];

export type ClusterStatus = Schemas['ClusterStatus'];
export type NodeStatus = Schemas['NodeStatus'];
export type RangeStatus = Schemas['RangeStatus'];
export type NodeRole = Schemas['Role'];
export type RaftEvent = Schemas['RaftEvent'];
export type RaftEventKind = RaftEvent['kind'];
export type RangeEvent = Schemas['RangeEvent'];
export type RangeEventKind = RangeEvent['kind'];
export type ApiErrorBody = Schemas['Error'];
export type ApiErrorCode = Schemas['ErrorCode'];
export type Members = Schemas['Members'];
export type ClusterStats = Schemas['ClusterStats'];
export type MemberStats = Schemas['MemberStats'];
export type NodeStats = Schemas['NodeStats'];
export type EngineStats = Schemas['EngineStats'];
export type EngineActivity = Schemas['EngineActivity'];
export type RaftStats = Schemas['RaftStats'];
export type CanaryStats = Schemas['CanaryStats'];
export type ElectionReason = Schemas['ElectionReason'];

type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never;

/** Paths without parameters whose GET answers JSON; `getJson` accepts exactly these. */
export type JsonGetPath = {
  [P in keyof paths]: paths[P] extends { parameters: { path?: never } }
    ? [JsonOk<paths[P]['get']>] extends [never]
      ? never
      : P
    : never;
}[keyof paths];

/** The JSON body of a 200 answer to `GET path`. */
export type JsonGetResponse<P extends JsonGetPath> = JsonOk<paths[P]['get']>;
