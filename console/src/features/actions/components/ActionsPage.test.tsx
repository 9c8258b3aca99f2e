import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import recorded from '../../../test/recorded/actions.json';
import ranges from '../../../test/recorded/ranges.json';
import auth from '../../../test/recorded/auth.json';
import { TOKEN_KEY } from '../../../lib/credential';
import { makeToken } from '../../../test/tokens';
import { serveRecorded, type RecordedApi, type Route } from '../../../test/recordedApi';
import { renderWithQuery } from '../../../test/render';
import { ActionsPage } from './ActionsPage';

// Every answer and status below was recorded from a real three-node cluster by
// scripts/record-payloads.mjs (node 3 removed, added back as a learner, promoted).

beforeEach(() => {
  MockEventSource.reset();
});

function start(routes: Route[], members = recorded.membersBefore): RecordedApi {
  const api = serveRecorded([{ method: 'GET', url: '/v1/cluster/members', answer: members }, ...routes]);
  renderWithQuery(<ActionsPage />);
  act(() => {
    MockEventSource.latest().emit('status', recorded.statusBefore.body);
  });
  return api;
}

function chooseChange(label: string) {
  fireEvent.change(screen.getByRole('combobox', { name: 'Change' }), { target: { value: label } });
}

describe('ActionsPage', () => {
  it('marks a voter that a joint change is removing as leaving', async () => {
    // The recorded members, with node 3 as the API reports a voter the group is
    // leaving in a joint configuration.
    const members = {
      ...recorded.membersBefore,
      body: {
        members: recorded.membersBefore.body.members.map((m) => ({ ...m, leaving: m.id === 3 })),
      },
    };
    start([], members);
    const row = await screen.findByTestId('member-row-3');
    expect(row).toHaveAttribute('data-leaving', 'true');
    expect(row).toHaveTextContent('voter, leaving');
    expect(screen.getByTestId('member-row-1')).toHaveAttribute('data-leaving', 'false');
  });

  it('shows every member with its live role and the fault tolerance now', async () => {
    start([]);
    const row = await screen.findByTestId('member-row-1');
    expect(row).toHaveTextContent('leader');
    expect(screen.getByTestId('member-row-3')).toHaveAttribute('data-voter', 'true');
    expect(screen.getByTestId('tolerance-now')).toHaveTextContent(
      '3 voters, quorum 2: one more failure is survived; a second loses quorum',
    );
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'live');
  });

  it('says what removing a voter does to fault tolerance and sends nothing until confirmed', async () => {
    // Proves the confirmation step: the DELETE leaves only after "Apply change".
    const api = start([{ method: 'DELETE', url: '/v1/cluster/members/3', answer: recorded.removed }]);
    await screen.findByTestId('member-row-3');
    chooseChange('remove');
    fireEvent.change(screen.getByRole('combobox', { name: 'Member' }), { target: { value: '3' } });
    fireEvent.click(screen.getByTestId('review-change'));
    expect(screen.getByTestId('impact-summary')).toHaveTextContent('After this, one more failure loses quorum.');
    expect(screen.getByTestId('impact-numbers')).toHaveTextContent('Voters 3 → 2, quorum 2 → 2, failures survived 1 → 0.');
    expect(api.requests('DELETE')).toHaveLength(0);

    fireEvent.click(screen.getByTestId('confirm-button'));
    await waitFor(() => {
      expect(screen.queryByTestId('member-row-3')).not.toBeInTheDocument();
    });
    expect(api.requests('DELETE').map((r) => r.url)).toEqual(['/v1/cluster/members/3']);
    expect(screen.getByTestId('change-ok')).toHaveTextContent('Members now: 1 (voter), 2 (voter).');
  });

  it('adds a member back as a learner and shows it as one once the stream reports it', async () => {
    const api = start([{ method: 'POST', url: '/v1/cluster/members', answer: recorded.added }], recorded.removed);
    await screen.findByTestId('member-row-2');
    chooseChange('add');
    fireEvent.change(screen.getByRole('textbox', { name: 'Node id' }), { target: { value: '3' } });
    fireEvent.change(screen.getByRole('textbox', { name: 'Address (host:port)' }), { target: { value: '127.0.0.1:17503' } });
    fireEvent.click(screen.getByTestId('review-change'));
    expect(screen.getByTestId('impact-summary')).toHaveTextContent('A learner does not vote: fault tolerance is unchanged');
    fireEvent.click(screen.getByTestId('confirm-button'));
    const row = await screen.findByTestId('member-row-3');
    expect(row).toHaveAttribute('data-voter', 'false');
    expect(api.requests('POST')[0]?.body).toEqual({ id: 3, address: '127.0.0.1:17503' });
    act(() => {
      MockEventSource.latest().emit('status', recorded.statusWithLearner.body);
    });
    expect(screen.getByTestId('member-row-3')).toHaveAttribute('data-role', 'learner');
  });

  it('shows the API’s error for a bad address verbatim', async () => {
    start([{ method: 'POST', url: '/v1/cluster/members', answer: recorded.addBadAddress }]);
    await screen.findByTestId('member-row-1');
    chooseChange('add');
    fireEvent.change(screen.getByRole('textbox', { name: 'Node id' }), { target: { value: '7' } });
    fireEvent.change(screen.getByRole('textbox', { name: 'Address (host:port)' }), { target: { value: 'not an address' } });
    fireEvent.click(screen.getByTestId('review-change'));
    fireEvent.click(screen.getByTestId('confirm-button'));
    const error = await screen.findByTestId('api-error');
    expect(error).toHaveAttribute('data-code', 'INVALID_ARGUMENT');
    expect(error).toHaveTextContent(recorded.addBadAddress.body.message);
  });

  it('cannot review an add without a numeric id and an address', async () => {
    start([]);
    await screen.findByTestId('member-row-1');
    chooseChange('add');
    fireEvent.change(screen.getByRole('textbox', { name: 'Node id' }), { target: { value: 'four' } });
    fireEvent.change(screen.getByRole('textbox', { name: 'Address (host:port)' }), { target: { value: 'h:1' } });
    expect(screen.getByTestId('review-change')).toBeDisabled();
  });

  it('replaces a voter through a promote with ?replace', async () => {
    const withLearner = { status: 200, body: { members: [...recorded.membersBefore.body.members, { id: 4, address: '127.0.0.1:17504', voter: false }] } };
    const api = start([{ method: 'POST', url: '/v1/cluster/members/4/promote', answer: recorded.promoted }], withLearner);
    await screen.findByTestId('member-row-4');
    chooseChange('replace');
    fireEvent.change(screen.getByRole('combobox', { name: 'Voter to remove' }), { target: { value: '3' } });
    fireEvent.click(screen.getByTestId('review-change'));
    expect(screen.getByTestId('impact-numbers')).toHaveTextContent('Voters 3 → 3, quorum 2 → 2, failures survived 1 → 1.');
    fireEvent.click(screen.getByTestId('confirm-button'));
    await screen.findByTestId('change-ok');
    expect(api.requests('POST').map((r) => r.url)).toEqual(['/v1/cluster/members/4/promote?replace=3']);
  });

  it('transfers leadership and reports the new leader', async () => {
    const api = start([{ method: 'POST', url: '/v1/cluster/leader', answer: recorded.transfer }]);
    await screen.findByTestId('member-row-1');
    const form = screen.getByTestId('transfer-form');
    fireEvent.change(within(form).getByRole('combobox', { name: 'New leader' }), { target: { value: '2' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Transfer leadership' }));
    expect(await within(form).findByTestId('transfer-ok')).toHaveTextContent('Node 2 leads, in term 7.');
    expect(api.requests('POST')[0]?.body).toEqual({ target_id: 2 });
  });

  it('splits a range at a key and says what the split did, also when it did nothing', async () => {
    // The answers were recorded from a real cluster split at "m", then asked again.
    const answers = [ranges.split, ranges.splitAgain];
    const api = start([{ method: 'POST', url: '/v1/cluster/ranges/split', answer: () => answers.shift() ?? ranges.splitAgain }]);
    await screen.findByTestId('member-row-1');
    const form = screen.getByTestId('split-form');
    const button = within(form).getByRole('button', { name: 'Split range' });
    expect(button).toBeDisabled();
    fireEvent.change(within(form).getByRole('textbox', { name: 'Split at key' }), { target: { value: 'm' } });
    fireEvent.click(button);
    const ok = await within(form).findByTestId('split-ok');
    expect(ok).toHaveTextContent('Range 2 now serves the keys from m on (split at index 26), led by node 1.');
    expect(ok).toHaveAttribute('data-split', 'true');
    expect(api.requests('POST')[0]?.body).toEqual({ key: 'm', encoding: 'utf8' });

    fireEvent.click(button);
    await waitFor(() => {
      expect(within(form).getByTestId('split-ok')).toHaveTextContent('Range 2 starts at m already: nothing was split.');
    });
    expect(within(form).getByTestId('split-ok')).toHaveAttribute('data-split', 'false');
  });

  it('triggers a snapshot and a compaction and lists each member’s outcome', async () => {
    const api = start([
      { method: 'POST', url: '/v1/cluster/snapshot', answer: recorded.snapshotAll },
      { method: 'POST', url: '/v1/cluster/compact', answer: recorded.compactAll },
    ]);
    await screen.findByTestId('member-row-1');
    const form = screen.getByTestId('maintenance-form');
    fireEvent.click(within(form).getByRole('button', { name: 'Snapshot' }));
    const result = await within(form).findByTestId('maintenance-result');
    expect(result).toHaveAttribute('data-op', 'snapshot');
    const first = recorded.snapshotAll.body.nodes[0];
    expect(within(result).getByTestId('outcome-1')).toHaveTextContent(
      `node 1 done durable through index ${first?.durable_index}; log starts at ${first?.first_index_after}`,
    );
    expect(api.requests('POST')[0]?.body).toEqual({ node_ids: [] });

    fireEvent.change(within(form).getByRole('combobox', { name: 'On' }), { target: { value: '2' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Compact' }));
    await waitFor(() => {
      expect(within(form).getByTestId('maintenance-result')).toHaveAttribute('data-op', 'compact');
    });
    expect(api.requests('POST')[1]?.body).toEqual({ node_ids: [2] });
  });

  it('reads the members again when the stream reports a membership change', async () => {
    // Proves a change made elsewhere (the CLI, another browser) shows up without a reload.
    let answer = recorded.membersBefore;
    serveRecorded([{ method: 'GET', url: '/v1/cluster/members', answer: () => answer }]);
    renderWithQuery(<ActionsPage />);
    await screen.findByTestId('member-row-3');
    answer = recorded.removed;
    act(() => {
      MockEventSource.latest().emit('raft', {
        kind: 'membership_changed',
        node_id: 1,
        term: 6,
        leader_id: 1,
        role: 'leader',
        at_ms: 1,
        duration_ms: 0,
        detail: 'voters [1, 2]',
      });
    });
    await waitFor(() => {
      expect(screen.queryByTestId('member-row-3')).not.toBeInTheDocument();
    });
  });

  describe('without the admin role', () => {
    function removeNode3() {
      chooseChange('remove');
      fireEvent.change(screen.getByRole('combobox', { name: 'Member' }), { target: { value: '3' } });
      fireEvent.click(screen.getByTestId('review-change'));
      fireEvent.click(screen.getByTestId('confirm-button'));
    }

    it('signed out: says admin is needed, still sends the removal and shows the 401 with a hint', async () => {
      // The refusal was recorded from a real cluster (RECORD_ONLY=auth).
      const api = start([{ method: 'DELETE', url: '/v1/cluster/members/3', answer: auth.removeAnonymous }]);
      await screen.findByTestId('member-row-3');
      expect(screen.getByTestId('admin-needed')).toHaveTextContent(
        'These actions need the admin role: sign in with an admin token. You are not signed in (anonymous).',
      );
      removeNode3();
      const error = await screen.findByTestId('api-error');
      expect(error).toHaveAttribute('data-code', 'UNAUTHENTICATED');
      expect(error).toHaveTextContent(`HTTP 401${auth.removeAnonymous.body.message}`);
      expect(screen.getByTestId('auth-hint')).toHaveTextContent('Sign in (top right) with a token');
      expect(api.requests('DELETE')).toHaveLength(1);
      expect(api.requests('DELETE')[0]?.headers).not.toHaveProperty('authorization');
      expect(screen.getByTestId('member-row-3')).toBeInTheDocument();
    });

    it('signed in with a write token: names the role, sends the token and shows the 403 with a hint', async () => {
      const token = makeToken('writer', 'write');
      window.localStorage.setItem(TOKEN_KEY, token);
      const api = start([{ method: 'DELETE', url: '/v1/cluster/members/3', answer: auth.removeAsWriter }]);
      await screen.findByTestId('member-row-3');
      expect(screen.getByTestId('admin-needed')).toHaveTextContent('Signed in as writer with the write role.');
      removeNode3();
      const error = await screen.findByTestId('api-error');
      expect(error).toHaveAttribute('data-code', 'PERMISSION_DENIED');
      expect(error).toHaveTextContent(auth.removeAsWriter.body.message);
      expect(screen.getByTestId('auth-hint')).toHaveTextContent('The role of the token sent (write, writer) is not enough');
      expect(api.requests('DELETE')[0]?.headers.authorization).toBe(`Bearer ${token}`);
    });

    it('says nothing once signed in as admin', async () => {
      window.localStorage.setItem(TOKEN_KEY, makeToken('ops', 'admin'));
      start([]);
      await screen.findByTestId('member-row-3');
      expect(screen.queryByTestId('admin-needed')).not.toBeInTheDocument();
    });

    it('says an expired admin token is not enough', async () => {
      window.localStorage.setItem(TOKEN_KEY, makeToken('ops', 'admin', -30));
      start([]);
      await screen.findByTestId('member-row-3');
      expect(screen.getByTestId('admin-needed')).toHaveTextContent('The token of ops has expired.');
    });
  });
});
