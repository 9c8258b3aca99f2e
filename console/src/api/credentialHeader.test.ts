import { signIn, signOut } from '../lib/credential';
import { serveRecorded } from '../test/recordedApi';
import recorded from '../test/recorded/actions.json';
import { makeToken } from '../test/tokens';
import { getJson } from './http';
import { sendJson } from './send';

// Proves the API layer is the one place that sends the token: with one stored, every
// fetch of getJson and sendJson carries `authorization: Bearer <token>`; without, none.
describe('the API layer and the stored token', () => {
  function serve() {
    return serveRecorded([
      { method: 'GET', url: '/v1/cluster/members', answer: recorded.membersBefore },
      { method: 'POST', url: '/v1/cluster/snapshot', answer: recorded.snapshotAll },
    ]);
  }

  it('sends no authorization header when signed out', async () => {
    const api = serve();
    await getJson('/v1/cluster/members');
    await sendJson('POST', '/v1/cluster/snapshot', { node_ids: [] });
    expect(api.sent).toHaveLength(2);
    for (const request of api.sent) expect(request.headers).not.toHaveProperty('authorization');
  });

  it('adds the bearer token to every request when signed in, and stops on sign-out', async () => {
    const api = serve();
    const token = makeToken('ops', 'admin');
    signIn(token);
    await getJson('/v1/cluster/members');
    await sendJson('POST', '/v1/cluster/snapshot', { node_ids: [] });
    expect(api.sent.map((r) => r.headers.authorization)).toEqual([`Bearer ${token}`, `Bearer ${token}`]);
    // The other headers stay.
    expect(api.sent[1]?.headers['content-type']).toBe('application/json');
    expect(api.sent[0]?.headers.accept).toBe('application/json');

    signOut();
    await getJson('/v1/cluster/members');
    expect(api.sent[2]?.headers).not.toHaveProperty('authorization');
  });
});
