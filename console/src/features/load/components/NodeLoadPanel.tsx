import { Panel } from '../../../components/Panel';
import type { NodeRatesState } from '../hooks/useNodeRates';
import styles from './LoadPage.module.css';
import { RateChart, type Series } from './RateChart';

const COLORS = ['#2f6fe0', '#14733e', '#c9372c', '#8a5300', '#6b3fa0', '#0f7c8c', '#5b6676'];

function fixed(value: number | null, digits = 1): string {
  return value === null ? '—' : value.toFixed(digits);
}

/** Throughput, latency and errors per node and per operation, from the nodes' own counters. */
export function NodeLoadPanel({ rates }: { rates: NodeRatesState }) {
  const ids = Object.keys(rates.samples)
    .map(Number)
    .sort((a, b) => a - b);
  const series: Series[] = ids.map((id, i) => ({ key: `n${id}`, label: `node ${id}`, color: COLORS[i % COLORS.length] ?? '#2f6fe0' }));
  const data = rates.history.map((point) => {
    const row: Record<string, number> = { atMs: point.atMs };
    for (const [id, ops] of Object.entries(point.opsByNode)) row[`n${id}`] = ops;
    return row;
  });
  const total = Object.values(rates.rates).reduce((sum, r) => sum + r.opsPerS, 0);

  return (
    <Panel
      title="Nodes: client operations"
      aside={
        <span data-testid="nodes-total" data-ops={total.toFixed(3)}>
          {total.toFixed(1)} ops/s in all
        </span>
      }
    >
      {rates.history.length === 0 ? (
        <p className={styles.placeholder}>
          {rates.stream === 'reconnecting'
            ? 'The event stream is unavailable; retrying.'
            : 'Waiting for two samples of the nodes’ counters…'}
        </p>
      ) : (
        <RateChart data={data} series={series} unit="/s" label="Client operations per second, by node" />
      )}
      {Object.entries(rates.unreachable).map(([id, why]) => (
        <p key={id} className={styles.warning}>
          Node {id} could not be asked: {why}
        </p>
      ))}
      <div className={styles.tableWrap}>
        <table className={styles.table}>
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Operation</th>
              <th scope="col" className={styles.num}>
                ops/s
              </th>
              <th scope="col" className={styles.num}>
                p50 ms
              </th>
              <th scope="col" className={styles.num}>
                p99 ms
              </th>
              <th scope="col">Errors/s by code</th>
            </tr>
          </thead>
          <tbody>
            {ids.map((id) => {
              const rate = rates.rates[id];
              if (!rate || rate.operations.length === 0) {
                return (
                  <tr key={id} data-testid={`node-load-${id}`} data-ops="0">
                    <td>{id}</td>
                    <td colSpan={5} className={styles.muted}>
                      idle
                    </td>
                  </tr>
                );
              }
              return rate.operations.map((op, i) => (
                <tr
                  key={`${id} ${op.operation}`}
                  data-testid={i === 0 ? `node-load-${id}` : undefined}
                  data-ops={i === 0 ? rate.opsPerS.toFixed(3) : undefined}
                >
                  <td>{i === 0 ? id : ''}</td>
                  <td className={styles.mono}>{op.operation}</td>
                  <td className={styles.num}>{fixed(op.opsPerS)}</td>
                  <td className={styles.num}>{fixed(op.p50Ms)}</td>
                  <td className={styles.num}>{fixed(op.p99Ms)}</td>
                  <td className={styles.mono}>
                    {Object.keys(op.errorsByCode).length === 0
                      ? '—'
                      : Object.entries(op.errorsByCode)
                          .map(([code, perS]) => `${code}: ${perS.toFixed(1)}`)
                          .join(', ')}
                  </td>
                </tr>
              ));
            })}
          </tbody>
        </table>
      </div>
    </Panel>
  );
}
