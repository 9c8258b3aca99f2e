import { Panel } from '../../../components/Panel';
import type { MemberStats, SlowRequest } from '../api/types';
import styles from './LoadPage.module.css';

/** How many of the latest slow requests the panel lists. */
export const SHOWN = 20;

interface Row extends SlowRequest {
  node: number;
}

/** Every node's kept slow requests, newest first. */
export function latestSlowRequests(samples: Record<number, MemberStats>): Row[] {
  return Object.values(samples)
    .flatMap((member) => (member.stats?.slow_requests ?? []).map((s) => ({ ...s, node: member.id })))
    .sort((a, b) => b.at_ms - a.at_ms)
    .slice(0, SHOWN);
}

function clock(atMs: number): string {
  return new Date(atMs).toLocaleTimeString([], { hour12: false });
}

function answer(s: SlowRequest): string {
  return s.grpc_status === undefined ? String(s.status) : `${s.status} grpc ${s.grpc_status}`;
}

function Trace({ request }: { request: SlowRequest }) {
  if (request.trace_url) {
    return (
      <a href={request.trace_url} target="_blank" rel="noreferrer" className={styles.mono}>
        {request.trace_id?.slice(0, 16)}…
      </a>
    );
  }
  if (!request.trace_id) return <span className={styles.muted}>no trace</span>;
  return (
    <span className={styles.mono} title={request.trace_id}>
      {request.trace_id.slice(0, 16)}… {request.sampled ? '' : <span className={styles.muted}>(not sampled)</span>}
    </span>
  );
}

/**
 * The latest requests the nodes answered after their slow-request threshold
 * (`--slow-request-ms`), each with its trace: a link into the trace viewer when the node
 * has one and the trace was sampled.
 */
export function SlowRequestsPanel({ samples }: { samples: Record<number, MemberStats> }) {
  const rows = latestSlowRequests(samples);
  return (
    <Panel title="Slow requests" aside={<span data-testid="slow-count">{rows.length} latest</span>}>
      {rows.length === 0 ? (
        <p className={styles.placeholder}>No request took the nodes’ slow-request threshold.</p>
      ) : (
        <div className={styles.tableWrap}>
          <table className={styles.table}>
            <thead>
              <tr>
                <th scope="col">Answered</th>
                <th scope="col">Node</th>
                <th scope="col">Route</th>
                <th scope="col">Answer</th>
                <th scope="col" className={styles.num}>
                  ms
                </th>
                <th scope="col">Trace</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((s, i) => (
                <tr key={`${s.node} ${s.at_ms} ${i}`} data-testid="slow-request">
                  <td>{clock(s.at_ms)}</td>
                  <td>{s.node}</td>
                  <td className={styles.mono}>
                    {s.protocol} {s.route}
                  </td>
                  <td>{answer(s)}</td>
                  <td className={styles.num}>{s.duration_ms.toFixed(1)}</td>
                  <td>
                    <Trace request={s} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Panel>
  );
}
