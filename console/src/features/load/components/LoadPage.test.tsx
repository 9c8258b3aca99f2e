import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import k6Recorded from '../../../test/recorded/k6.json';
import recorded from '../../../test/recorded/load.json';
import { serveRecorded, type Route } from '../../../test/recordedApi';
import { renderWithQuery } from '../../../test/render';
import { parseSse } from '../../../test/sse';
import { LoadPage } from './LoadPage';

// Every answer below was recorded from a real cluster, its load runner and k6 during a
// smoke run (scripts/record-payloads.mjs): statsA and statsB about two seconds apart.

beforeEach(() => {
  MockEventSource.reset();
});

const BASE: Route[] = [
  { method: 'GET', url: '/v1/cluster/stats', answer: recorded.statsA },
  { method: 'GET', url: '/load/scenarios', answer: recorded.scenarios },
];

function form() {
  return screen.getByTestId('run-form');
}

describe('LoadPage', () => {
  it('turns the nodes’ counters into throughput, latency and errors per node and operation', async () => {
    // Proves the first sample (GET) and the next (SSE `stats`) make rates, shown per node.
    serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runIdle }]);
    renderWithQuery(<LoadPage />);
    expect(await screen.findByText('Waiting for two samples of the nodes’ counters…')).toBeInTheDocument();
    await waitFor(() => {
      expect(MockEventSource.latest().url).toBe('/v1/cluster/events');
    });
    act(() => {
      MockEventSource.latest().emit('stats', recorded.statsB.body);
    });
    const total = await screen.findByTestId('nodes-total');
    expect(Number(total.getAttribute('data-ops'))).toBeGreaterThan(0);
    expect(screen.getByTestId('rate-chart')).toBeInTheDocument();
    const busiest = recorded.statsB.body.nodes.map((n) => n.id);
    for (const id of busiest) expect(screen.getByTestId(`node-load-${id}`)).toBeInTheDocument();
    expect(screen.getAllByText('rest PUT /v1/kv/{key}').length).toBeGreaterThan(0);
    expect(screen.queryByText(/health/)).not.toBeInTheDocument();
    expect(screen.getByTestId('stream-status')).toHaveAttribute('data-state', 'live');
  });

  it('lists the nodes’ slow requests, newest first, each linked to its sampled trace', async () => {
    // Proves the panel gathers every node's slow requests from the stats, newest first, and
    // links each sampled trace where the node's --trace-link put it (the recording's cluster
    // ran with --slow-request-ms 1 and a trace viewer).
    serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runIdle }]);
    renderWithQuery(<LoadPage />);
    const rows = await screen.findAllByTestId('slow-request');
    const kept = recorded.statsA.body.nodes.flatMap((n) => n.stats.slow_requests);
    expect(rows.length).toBe(Math.min(kept.length, 20));
    const newest = [...kept].sort((a, b) => b.at_ms - a.at_ms)[0];
    if (!newest?.trace_url) throw new Error('the recording holds a linked slow request');
    const first = rows[0];
    if (!first) throw new Error('a row');
    expect(within(first).getByText(`${newest.protocol} ${newest.route}`)).toBeInTheDocument();
    expect(within(first).getByRole('link')).toHaveAttribute('href', newest.trace_url);
    expect(newest.trace_url).toContain(newest.trace_id);
  });

  it('starts a run with the typed rate and duration, then shows k6’s own figures', async () => {
    // Proves the POST body, the running state, and k6's figures from its own event stream
    // (recorded from k6 during a real 20/s smoke run), p99 included.
    const api = serveRecorded([
      ...BASE,
      { method: 'GET', url: '/load/run', answer: () => (api.requests('POST').length === 0 ? recorded.runIdle : recorded.runRunning) },
      { method: 'POST', url: '/load/run', answer: recorded.runStarted },
    ]);
    renderWithQuery(<LoadPage />);
    await within(form()).findByRole('option', { name: 'ycsb-a' });
    fireEvent.change(within(form()).getByRole('textbox', { name: 'Rate (requests/s)' }), { target: { value: '20' } });
    fireEvent.change(within(form()).getByRole('textbox', { name: 'Duration (s)' }), { target: { value: '8' } });
    fireEvent.click(within(form()).getByRole('button', { name: 'Start' }));
    const status = await screen.findByTestId('run-status');
    expect(status).toHaveAttribute('data-state', 'running');
    expect(status).toHaveTextContent('smoke at 20/s for 8 s');
    expect(api.requests('POST')[0]?.body).toEqual({ scenario: 'smoke', rate_per_s: 20, duration_s: 8 });
    expect(within(form()).getByRole('button', { name: 'Start' })).toBeDisabled();

    await waitFor(() => {
      expect(MockEventSource.instances.some((s) => s.url === '/k6/events')).toBe(true);
    });
    const k6 = MockEventSource.instances.find((s) => s.url === '/k6/events');
    if (!k6) throw new Error('no k6 stream');
    const events = parseSse(k6Recorded.k6Events.body);
    act(() => {
      for (const e of events) k6.emit(e.event, e.data);
    });
    expect(Number(screen.getByTestId('k6-rps').getAttribute('data-value'))).toBeGreaterThan(0);
    expect(Number(screen.getByTestId('k6-p99').getAttribute('data-value'))).toBeGreaterThan(0);
    expect(screen.getByTestId('k6-vus')).toHaveTextContent(/^\d+$/);
    expect(screen.getByTestId('k6-p95')).not.toHaveTextContent('—');
    expect(screen.getByTestId('k6-checks-failed')).toHaveTextContent('%');
    expect(screen.getByRole('img', { name: 'k6 requests per second' })).toBeInTheDocument();

    // k6 ends its run and its stream: the last figures stay while a new stream is tried.
    const p99 = screen.getByTestId('k6-p99').getAttribute('data-value');
    act(() => {
      k6.fail({ closed: true });
    });
    await waitFor(() => {
      expect(MockEventSource.instances.filter((s) => s.url === '/k6/events').length).toBe(2);
    });
    expect(screen.getByTestId('k6-p99')).toHaveAttribute('data-value', p99);
  });

  it('says k6’s stream is being reopened when it is lost during a run', async () => {
    serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runRunning }]);
    renderWithQuery(<LoadPage />);
    await waitFor(() => {
      expect(MockEventSource.instances.some((s) => s.url === '/k6/events')).toBe(true);
    });
    const k6 = MockEventSource.instances.find((s) => s.url === '/k6/events');
    act(() => {
      k6?.fail({ closed: true });
    });
    expect(await screen.findByTestId('k6-stream-lost')).toHaveTextContent('stream closed');
    expect(k6?.closed).toBe(true);
    await waitFor(() => {
      expect(MockEventSource.instances.filter((s) => s.url === '/k6/events').length).toBe(2);
    });
  });

  it('shows the runner’s refusals as it gave them', async () => {
    const api = serveRecorded([
      ...BASE,
      { method: 'GET', url: '/load/run', answer: recorded.runIdle },
      { method: 'POST', url: '/load/run', answer: () => (api.requests('POST').length === 1 ? recorded.runInvalid : recorded.runConflict) },
    ]);
    renderWithQuery(<LoadPage />);
    await within(form()).findByRole('option', { name: 'failover' });
    fireEvent.change(within(form()).getByRole('textbox', { name: 'Rate (requests/s)' }), { target: { value: '5000' } });
    fireEvent.click(within(form()).getByRole('button', { name: 'Start' }));
    const error = await within(form()).findByTestId('api-error');
    expect(error).toHaveTextContent(recorded.runInvalid.body.message);
    expect(api.requests('POST')[0]?.body).toMatchObject({ rate_per_s: 5000 });
    fireEvent.click(within(form()).getByRole('button', { name: 'Start' }));
    await waitFor(() => {
      expect(within(form()).getByTestId('api-error')).toHaveTextContent(recorded.runConflict.body.message);
    });
    expect(within(form()).getByTestId('api-error')).toHaveAttribute('data-code', 'CONFLICT');
  });

  it('shows how a run ended, with k6’s last lines', async () => {
    serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runEnded }]);
    renderWithQuery(<LoadPage />);
    const status = await screen.findByTestId('run-status');
    expect(status).toHaveAttribute('data-state', recorded.runEnded.body.state);
    if (recorded.runEnded.body.exit_code === 99) expect(status).toHaveTextContent('a threshold was crossed');
    expect(within(status).getByText('k6’s last lines')).toBeInTheDocument();
    expect(screen.getByRole('progressbar', { name: 'Run progress' })).toHaveAttribute('aria-valuenow', '100');
  });

  it('says the load runner is missing when the gateway has none', async () => {
    serveRecorded([
      { method: 'GET', url: '/v1/cluster/stats', answer: recorded.statsA },
      { method: 'GET', url: '/load/scenarios', answer: recorded.k6Absent },
      { method: 'GET', url: '/load/run', answer: recorded.k6Absent },
    ]);
    renderWithQuery(<LoadPage />);
    const error = await screen.findByTestId('api-error');
    expect(error).toHaveTextContent('UNAVAILABLE');
    expect(screen.getByText(/The load runner starts with the cluster/)).toBeInTheDocument();
    expect(screen.getByText(/No k6 run in progress/)).toBeInTheDocument();
  });
});
