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
export type LeaseGrantRequest = Schemas['LeaseGrantRequest'];
export type LeaseResult = Schemas['LeaseResult'];
export type LeaseList = Schemas['LeaseList'];
export type LeaseStatus = Schemas['LeaseStatus'];
export type TimeToLiveResult = Schemas['TimeToLiveResult'];
export type RevokeResult = Schemas['RevokeResult'];
export type TxnRequest = Schemas['TxnRequest'];
export type TxnResult = Schemas['TxnResult'];
export type TxnCompare = Schemas['TxnCompare'];
export type TxnCompareOp = Schemas['CompareOpJson'];
export type TxnOp = Schemas['TxnOp'];
export type TxnOpKind = Schemas['TxnOpKind'];
export type TxnOpResult = Schemas['TxnOpResultJson'];
export type TxnKeyValue = Schemas['TxnKeyValue'];
export type Encoding = Schemas['Encoding'];
export type TxnRangeOp = Schemas['TxnRangeOp'];
