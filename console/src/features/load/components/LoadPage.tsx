import { useQuery } from '@tanstack/react-query';
import { LiveIndicator } from '../../../components/LiveIndicator';
import { isActive, runQuery } from '../api/runner';
import { useK6Figures } from '../hooks/useK6Figures';
import { useNodeRates } from '../hooks/useNodeRates';
import { K6Panel } from './K6Panel';
import page from '../../../components/Page.module.css';
import styles from './LoadPage.module.css';
import { NodeLoadPanel } from './NodeLoadPanel';
import { RunControl } from './RunControl';
import { SlowRequestsPanel } from './SlowRequestsPanel';

/** Server-side load from the nodes' counters, always; k6's own figures beside them while it runs. */
export function LoadPage() {
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
      <RunControl />
      <SlowRequestsPanel samples={rates.samples} />
    </div>
  );
}
