import { Panel } from '../../../components/Panel';
import type { K6View } from '../hooks/useK6Figures';
import styles from './LoadPage.module.css';
import { RateChart } from './RateChart';

function percent(value: number | null): string {
  return value === null ? '—' : `${(value * 100).toFixed(1)}%`;
}

function ms(value: number | null): string {
  return value === null ? '—' : value.toFixed(1);
}

interface K6PanelProps {
  k6: K6View;
  active: boolean;
}

/** k6's own view of the run, second by second: VUs, requests/s, latency percentiles, failed checks. */
export function K6Panel({ k6, active }: K6PanelProps) {
  const figures = k6.latest;
  return (
    <Panel title="k6" aside={active ? 'each second of the run, from k6’s own event stream' : undefined}>
      {!active && !figures ? (
        <p className={styles.placeholder}>No k6 run in progress. Start one below to see k6’s own figures here.</p>
      ) : (
        <>
          <dl className={styles.figures} data-testid="k6-figures">
            <div>
              <dt>VUs</dt>
              <dd data-testid="k6-vus">{figures?.vus ?? '—'}</dd>
            </div>
            <div>
              <dt>requests/s</dt>
              <dd data-testid="k6-rps" data-value={figures?.requestsPerS ?? ''}>
                {figures?.requestsPerS == null ? '—' : figures.requestsPerS.toFixed(1)}
              </dd>
            </div>
            <div>
              <dt>p95 ms</dt>
              <dd data-testid="k6-p95">{ms(figures?.p95Ms ?? null)}</dd>
            </div>
            <div>
              <dt>p99 ms</dt>
              <dd data-testid="k6-p99" data-value={figures?.p99Ms ?? ''}>
                {ms(figures?.p99Ms ?? null)}
              </dd>
            </div>
            <div>
              <dt>checks failed</dt>
              <dd data-testid="k6-checks-failed" data-value={figures?.checksFailed ?? ''}>
                {percent(figures?.checksFailed ?? null)}
              </dd>
            </div>
            <div>
              <dt>requests failed</dt>
              <dd>{percent(figures?.requestsFailed ?? null)}</dd>
            </div>
          </dl>
          {k6.history.length > 1 && (
            <RateChart
              data={k6.history.map((p) => ({ atMs: p.atMs, rps: p.requestsPerS }))}
              series={[{ key: 'rps', label: 'k6 requests', color: '#6b3fa0' }]}
              unit="/s"
              label="k6 requests per second"
            />
          )}
          {k6.lost !== null && (
            <p className={styles.placeholder} data-testid="k6-stream-lost">
              k6’s event stream: {k6.lost}; reconnecting… (k6 opens it a second or so after the run starts)
            </p>
          )}
        </>
      )}
    </Panel>
  );
}
