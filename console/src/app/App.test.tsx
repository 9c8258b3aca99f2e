import { fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import recorded from '../test/recorded/actions.json';
import { serveRecorded } from '../test/recordedApi';
import { makeToken } from '../test/tokens';
import { MockEventSource } from '../test/MockEventSource';
import { App } from './App';
import { createQueryClient } from './queryClient';

beforeEach(() => {
  MockEventSource.reset();
  window.location.hash = '';
});

describe('App', () => {
  it('renders the shell with the section tabs and lands on the cluster view', () => {
    render(<App queryClient={createQueryClient()} />);
    const nav = screen.getByRole('navigation', { name: 'Sections' });
    const current = within(nav).getByRole('link', { name: 'Cluster' });
    expect(current).toHaveAttribute('href', '#/cluster');
    expect(current).toHaveAttribute('aria-current', 'page');
    expect(screen.getByRole('heading', { level: 1, name: 'Cluster' })).toBeInTheDocument();
    expect(screen.getByTestId('stream-status')).toBeInTheDocument();
  });

  it('falls back to the first section for an unknown fragment', () => {
    window.location.hash = '#/nope';
    render(<App queryClient={createQueryClient()} />);
    expect(screen.getByRole('heading', { level: 1, name: 'Cluster' })).toBeInTheDocument();
  });

  it('loads another section’s code when it is opened', async () => {
    window.location.hash = '#/keys';
    render(<App queryClient={createQueryClient()} />);
    expect(await screen.findByRole('heading', { level: 1, name: 'Keys' })).toBeInTheDocument();
  });

  it('asks again with the token when it changes while the first request is in flight', async () => {
    // Proves: a view's first request, sent without a token and still unanswered when the
    // operator signs in, is asked again with the token; its late refusal does not stay on
    // the view. (The first answer of a query was kept: a refetch joined the request in flight.)
    const sent: { authorization: string | null }[] = [];
    const first: { refuse?: () => void } = {};
    vi.stubGlobal('fetch', (input: RequestInfo | URL, init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const authorization = new Headers(init?.headers).get('authorization');
      if (!url.startsWith('/v1/cluster/members')) {
        return Promise.resolve(new Response('not here', { status: 599 }));
      }
      sent.push({ authorization });
      if (authorization === null) {
        return new Promise<Response>((resolve, reject) => {
          init?.signal?.addEventListener('abort', () => {
            reject(new DOMException('aborted', 'AbortError'));
          });
          first.refuse = () => {
            resolve(
              new Response(JSON.stringify({ code: 'UNAUTHENTICATED', message: 'a token is needed' }), {
                status: 401,
                headers: { 'Content-Type': 'application/json' },
              }),
            );
          };
        });
      }
      return Promise.resolve(
        new Response(JSON.stringify(recorded.membersBefore.body), {
          status: 200,
          headers: { 'Content-Type': 'application/json' },
        }),
      );
    });
    window.location.hash = '#/actions';
    render(<App queryClient={createQueryClient()} />);
    await waitFor(() => {
      expect(sent).toHaveLength(1);
    });
    const token = makeToken('ops', 'admin');
    fireEvent.click(screen.getByTestId('sign-in-button'));
    fireEvent.change(screen.getByRole('textbox', { name: 'Token' }), { target: { value: token } });
    fireEvent.click(within(screen.getByTestId('sign-in-form')).getByRole('button', { name: 'Sign in' }));
    expect(first.refuse).toBeDefined();
    first.refuse?.();
    await screen.findByTestId('member-row-3');
    expect(sent.map((r) => r.authorization)).toEqual([null, `Bearer ${token}`]);
    expect(screen.queryByText('UNAUTHENTICATED')).not.toBeInTheDocument();
  });

  it('asks again with the token once signed in, without a reload', async () => {
    // Proves the app refetches its queries when the token changes: the members are read
    // anonymously first, then again carrying the pasted token, and again without it after sign-out.
    const api = serveRecorded([{ method: 'GET', url: '/v1/cluster/members', answer: recorded.membersBefore }]);
    window.location.hash = '#/actions';
    render(<App queryClient={createQueryClient()} />);
    await screen.findByTestId('member-row-3');
    expect(screen.getByTestId('admin-needed')).toBeInTheDocument();
    expect(api.requests('GET', '/v1/cluster/members')).toHaveLength(1);

    const token = makeToken('ops', 'admin');
    fireEvent.click(screen.getByTestId('sign-in-button'));
    fireEvent.change(screen.getByRole('textbox', { name: 'Token' }), { target: { value: token } });
    fireEvent.click(within(screen.getByTestId('sign-in-form')).getByRole('button', { name: 'Sign in' }));
    await waitFor(() => {
      expect(api.requests('GET', '/v1/cluster/members')).toHaveLength(2);
    });
    expect(api.requests('GET', '/v1/cluster/members')[1]?.headers.authorization).toBe(`Bearer ${token}`);
    expect(screen.getByTestId('credential')).toHaveAttribute('data-role', 'admin');
    expect(screen.queryByTestId('admin-needed')).not.toBeInTheDocument();

    fireEvent.click(screen.getByTestId('sign-out-button'));
    await waitFor(() => {
      expect(api.requests('GET', '/v1/cluster/members')).toHaveLength(3);
    });
    expect(api.requests('GET', '/v1/cluster/members')[2]?.headers).not.toHaveProperty('authorization');
  });
});
