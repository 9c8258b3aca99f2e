import { useQuery } from '@tanstack/react-query';
import { LiveIndicator } from '../../../components/LiveIndicator';
import { isActive, runQuery } from '../api/runner';
import { useK6Figures } from '../hooks/useK6Figures';
import type { RunEventsOptions } from '../hooks/useRunEvents';
import { useNodeRates } from '../hooks/useNodeRates';
import { K6Panel } from './K6Panel';
import page from '../../../components/Page.module.css';
import styles from './LoadPage.module.css';
import { NodeLoadPanel } from './NodeLoadPanel';
import { RunControl } from './RunControl';
import { SlowRequestsPanel } from './SlowRequestsPanel';

interface LoadPageProps {
  /** Tests shorten the run stream's timings; the app uses the defaults. */
  runEvents?: RunEventsOptions;
}

/** Server-side load from the nodes' counters, always; k6's own figures beside them while it runs. */
export function LoadPage({ runEvents }: LoadPageProps = {}) {
  const rates = useNodeRates();
  const run = useQuery(runQuery);
  const k6 = useK6Figures(isActive(run.data));
  return (
    <div className={page.page}>
      <div className={page.titleRow}>
        <h1 className={page.title}>Load</h1>
        <LiveIndicator state={rates.stream} />
      </div>
      <div className={styles.columns}>
        <NodeLoadPanel rates={rates} />
        <K6Panel k6={k6} active={isActive(run.data)} />
      </div>
      <RunControl runEvents={runEvents} />
      <SlowRequestsPanel samples={rates.samples} />
    </div>
  );
}
