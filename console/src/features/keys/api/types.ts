// The KV contract's payloads, named from the generated OpenAPI types.
import type { components } from '../../../api/generated/schema';

type Schemas = components['schemas'];

export type ScanResult = Schemas['ScanResult'];
export type GetResult = Schemas['GetResult'];
export type WriteResult = Schemas['WriteResult'];
export type DeleteResult = Schemas['DeleteResult'];
export type PutJsonRequest = Schemas['PutJsonRequest'];
export type CasRequest = Schemas['CasRequest'];
export type CasResult = Schemas['CasResult'];
export type WatchChanges = Schemas['WatchChanges'];
export type WatchProgress = Schemas['WatchProgress'];
