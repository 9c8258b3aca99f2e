import { act, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { MockEventSource } from '../../../test/MockEventSource';
import k6Recorded from '../../../test/recorded/k6.json';
import recorded from '../../../test/recorded/load.json';
import runRecorded from '../../../test/recorded/run-events.json';
import { serveRecorded, type Route } from '../../../test/recordedApi';
import { renderWithQuery } from '../../../test/render';
import { parseSse } from '../../../test/sse';
import { LoadPage } from './LoadPage';

// Every answer below was recorded from a real cluster, its load runner and k6 during a
// smoke run (scripts/record-payloads.mjs): statsA and statsB about two seconds apart;
// run-events.json is what the runner pushed over GET /load/run/events while a 4 s run
// went by and a 30 s run was stopped after 2 s.

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

/** The latest stream opened on `url`. */
function streamOf(url: string): MockEventSource | undefined {
  return MockEventSource.instances.filter((s) => s.url === url).at(-1);
}

describe('LoadPage', () => {
  it('turns the nodes’ counters into throughput, latency and errors per node and operation', async () => {
    // Proves the first sample (GET) and the next (SSE `stats`) make rates, shown per node.
    serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runIdle }]);
    renderWithQuery(<LoadPage />);
    expect(await screen.findByText('Waiting for two samples of the nodes’ counters…')).toBeInTheDocument();
    await waitFor(() => {
      expect(streamOf('/v1/cluster/events')).toBeDefined();
    });
    act(() => {
      streamOf('/v1/cluster/events')?.emit('stats', recorded.statsB.body);
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

  it('follows the run over the runner’s event stream as it changes, without asking again', async () => {
    // Proves the run's state comes pushed: GET /load/run is read once, then the recorded
    // `run` events drive the view (idle, running with its plan, finished with k6's last
    // lines; a second run running, stopping, stopped), each as it arrives, and nothing
    // polls /load/run meanwhile.
    const api = serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runIdle }]);
    renderWithQuery(<LoadPage />);
    await waitFor(() => {
      expect(streamOf('/load/run/events')).toBeDefined();
    });
    const stream = streamOf('/load/run/events');
    if (!stream) throw new Error('no run stream');
    const events = parseSse(runRecorded.runEvents.body);
    expect(events.every((e) => e.event === 'run')).toBe(true);
    const states: string[] = [];
    for (const e of events) {
      const sent = JSON.parse(e.data) as { state: string; plan?: { duration_s: number } };
      act(() => {
        stream.emit(e.event, e.data);
      });
      if (sent.state === 'idle') {
        expect(screen.queryByTestId('run-status')).not.toBeInTheDocument();
        continue;
      }
      const status = screen.getByTestId('run-status');
      expect(status).toHaveAttribute('data-state', sent.state);
      expect(status).toHaveAttribute('data-stream', 'live');
      expect(status).toHaveTextContent(`smoke at 20/s for ${sent.plan?.duration_s ?? 0} s`);
      if (states.at(-1) !== sent.state) states.push(sent.state);
      if (['finished', 'stopped'].includes(sent.state)) {
        expect(within(status).getByText('k6’s last lines')).toBeInTheDocument();
        expect(within(form()).getByRole('button', { name: 'Start' })).toBeEnabled();
      }
      if (sent.state === 'running') expect(within(form()).getByRole('button', { name: 'Stop' })).toBeEnabled();
      if (sent.state === 'running' && states.length === 1) {
        // A run in progress is not polled: over a second later, still one GET.
        await new Promise((resolve) => setTimeout(resolve, 1200));
        expect(api.requests('GET', '/load/run')).toHaveLength(1);
      }
    }
    expect(states).toEqual(['running', 'finished', 'running', 'stopping', 'stopped']);
    expect(api.requests('GET', '/load/run')).toHaveLength(1);
    expect(MockEventSource.instances.filter((s) => s.url === '/load/run/events')).toHaveLength(1);
  });

  it('reopens a lost run stream, reading GET /load/run once meanwhile', async () => {
    // Proves the reconnect: the stream fails while a run lasts; the view says the stream
    // was lost, reads the run once (the recorded stopped run) so it does not freeze, opens a
    // new stream after the backoff, and its first event (the end of the run) clears the note.
    const events = parseSse(runRecorded.runEvents.body);
    const running = events.find((e) => e.data.includes('"state":"running"'));
    const stopped = events.at(-1);
    if (!running || !stopped) throw new Error('the recording lacks a running and a stopped run');
    const api = serveRecorded([
      ...BASE,
      { method: 'GET', url: '/load/run', answer: () => (api.requests('GET', '/load/run').length === 1 ? recorded.runIdle : runRecorded.runAfter) },
    ]);
    renderWithQuery(<LoadPage runEvents={{ reconnectDelaysMs: [20] }} />);
    await waitFor(() => {
      expect(streamOf('/load/run/events')).toBeDefined();
    });
    const first = streamOf('/load/run/events');
    act(() => {
      first?.emit('run', running.data);
    });
    expect(screen.getByTestId('run-status')).toHaveAttribute('data-state', 'running');
    act(() => {
      first?.fail({ closed: true });
    });
    expect(first?.closed).toBe(true);
    expect(await screen.findByTestId('run-stream-lost')).toHaveTextContent('stream closed');
    await waitFor(() => {
      expect(screen.getByTestId('run-status')).toHaveAttribute('data-state', 'stopped');
    });
    expect(api.requests('GET', '/load/run')).toHaveLength(2);
    await waitFor(() => {
      expect(MockEventSource.instances.filter((s) => s.url === '/load/run/events')).toHaveLength(2);
    });
    act(() => {
      streamOf('/load/run/events')?.emit('run', stopped.data);
    });
    expect(screen.queryByTestId('run-stream-lost')).not.toBeInTheDocument();
    expect(screen.getByTestId('run-status')).toHaveAttribute('data-stream', 'live');
  });

  it('keeps the last run when an event is malformed, and reopens a stream gone silent', async () => {
    // Proves a bad frame is not taken (the view keeps the running run) and a stream that
    // sends nothing for longer than the runner's heartbeat allows is replaced.
    serveRecorded([...BASE, { method: 'GET', url: '/load/run', answer: recorded.runIdle }]);
    renderWithQuery(<LoadPage runEvents={{ reconnectDelaysMs: [20], silenceLimitMs: 200 }} />);
    await waitFor(() => {
      expect(streamOf('/load/run/events')).toBeDefined();
    });
    act(() => {
      streamOf('/load/run/events')?.emit('run', recorded.runRunning.body);
      streamOf('/load/run/events')?.emit('run', '{"state":"exploded"}');
    });
    expect(screen.getByTestId('run-status')).toHaveAttribute('data-state', 'running');
    expect(await screen.findByTestId('run-stream-lost')).toHaveTextContent('no run state for 0.2 s');
    await waitFor(() => {
      expect(MockEventSource.instances.filter((s) => s.url === '/load/run/events').length).toBeGreaterThanOrEqual(2);
    });
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
    // No runner, no run stream to follow.
    expect(streamOf('/load/run/events')).toBeUndefined();
  });
});
