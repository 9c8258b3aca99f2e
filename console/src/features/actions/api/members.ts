import { queryOptions } from '@tanstack/react-query';
import { getJson } from '../../../api/http';
import { sendJson } from '../../../api/send';
import type { AddMemberRequest, Members } from './types';

export const membersQuery = queryOptions({
  queryKey: ['actions', 'members'] as const,
  queryFn: ({ signal }) => getJson('/v1/cluster/members', signal),
  retry: false,
});

/** POST /v1/cluster/members: the node joins as a learner. */
export function addMember(request: AddMemberRequest): Promise<Members> {
  return sendJson<Members>('POST', '/v1/cluster/members', request);
}

/** POST /v1/cluster/members/{id}/promote, optionally removing voter `replace` in the same joint change. */
export function promoteMember(id: number, replace?: number): Promise<Members> {
  const query = replace === undefined ? '' : `?replace=${replace}`;
  return sendJson<Members>('POST', `/v1/cluster/members/${id}/promote${query}`);
}

export function removeMember(id: number): Promise<Members> {
  return sendJson<Members>('DELETE', `/v1/cluster/members/${id}`);
}
