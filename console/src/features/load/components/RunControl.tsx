import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type SyntheticEvent } from 'react';
import controls from '../../../components/Controls.module.css';
import { ErrorNote } from '../../../components/ErrorNote';
import { Panel } from '../../../components/Panel';
import { Pill, type PillTone } from '../../../components/Pill';
import { isActive, runQuery, scenariosQuery, startRun, stopRun, type RunView } from '../api/runner';
import { useRunEvents, type RunEventsOptions } from '../hooks/useRunEvents';
import styles from './LoadPage.module.css';

const TONE: Record<RunView['state'], PillTone> = {
  idle: 'neutral',
  running: 'accent',
  stopping: 'warn',
  finished: 'good',
  stopped: 'neutral',
  failed: 'bad',
};

function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => {
      setNow(Date.now());
    }, 500);
    return () => {
      clearInterval(timer);
    };
  }, [active]);
  return now;
}

interface RunControlProps {
  /** Tests shorten the run stream's timings; the app uses the defaults. */
  runEvents?: RunEventsOptions;
}

/**
 * Start one of the bundled scenarios with a rate and a duration, stop it, follow it: the
 * runner pushes the run's state as it changes (useRunEvents).
 */
export function RunControl({ runEvents }: RunControlProps) {
  const client = useQueryClient();
  const scenarios = useQuery(scenariosQuery);
  const run = useQuery(runQuery);
  const follow = useRunEvents(scenarios.isSuccess, runEvents);
  const [scenario, setScenario] = useState('smoke');
  const [rate, setRate] = useState('20');
  const [duration, setDuration] = useState('10');
  const active = isActive(run.data);
  const now = useNow(active);

  const start = useMutation({
    mutationFn: startRun,
    onSuccess: (view) => {
      client.setQueryData(runQuery.queryKey, view);
    },
  });
  const stop = useMutation({
    mutationFn: stopRun,
    onSuccess: (view) => {
      client.setQueryData(runQuery.queryKey, view);
    },
  });

  function submit(event: SyntheticEvent) {
    event.preventDefault();
    stop.reset();
    // Numbers go as typed; the runner checks them and says why it refuses.
    start.mutate({ scenario, rate_per_s: Number(rate), duration_s: Number(duration) });
  }

  const view = run.data;
  const plan = view?.plan;
  let progress = 0;
  if (view && plan && view.started_at_ms > 0) {
    const end = view.ended_at_ms ?? now;
    progress = Math.min(1, Math.max(0, (end - view.started_at_ms) / (plan.duration_s * 1000)));
  }

  return (
    <Panel title="Run a scenario" aside={scenarios.data ? `against ${scenarios.data.target}` : undefined}>
      {scenarios.isError ? (
        <div className={styles.padded}>
          <ErrorNote error={scenarios.error} action="Asking the load runner for its scenarios" />
          <p className={controls.hint}>The load runner starts with the cluster (`./dev up`).</p>
        </div>
      ) : (
        <form className={controls.form} onSubmit={submit} aria-label="Run a scenario" data-testid="run-form">
          <div className={controls.row}>
            <label className={controls.field}>
              Scenario
              <select className={controls.select} value={scenario} onChange={(e) => { setScenario(e.target.value); }} name="scenario">
                {(scenarios.data?.scenarios ?? [{ name: 'smoke', description: '' }]).map((s) => (
                  <option key={s.name} value={s.name} title={s.description}>
                    {s.name}
                  </option>
                ))}
              </select>
            </label>
            <label className={controls.field}>
              Rate (requests/s)
              <input className={`${controls.input} ${styles.number}`} value={rate} onChange={(e) => { setRate(e.target.value); }} inputMode="numeric" name="rate" />
            </label>
            <label className={controls.field}>
              Duration (s)
              <input className={`${controls.input} ${styles.number}`} value={duration} onChange={(e) => { setDuration(e.target.value); }} inputMode="numeric" name="duration" />
            </label>
            <button type="submit" className={`${controls.button} ${controls.primary}`} disabled={active || start.isPending}>
              Start
            </button>
            <button
              type="button"
              className={`${controls.button} ${controls.danger}`}
              disabled={!active || view?.state === 'stopping' || stop.isPending}
              onClick={() => {
                stop.mutate();
              }}
            >
              Stop
            </button>
          </div>
          {scenarios.data && (
            <p className={controls.hint}>
              {scenarios.data.scenarios.find((s) => s.name === scenario)?.description}. At most{' '}
              {scenarios.data.max_rate_per_s} requests/s for {scenarios.data.max_duration_s} s; one run at a time.
            </p>
          )}
          {start.isError && <ErrorNote error={start.error} action="Starting the run" />}
          {stop.isError && <ErrorNote error={stop.error} action="Stopping the run" />}
          {run.isError && <ErrorNote error={run.error} action="Reading the run" />}
          {follow.lost && (
            <p className={controls.hint} data-testid="run-stream-lost">
              The run’s state stream was lost ({follow.lost}); reopening it.
            </p>
          )}
          {view && view.state !== 'idle' && plan && (
            <div className={styles.run} data-testid="run-status" data-state={view.state} data-stream={follow.stream}>
              <div className={styles.runLine}>
                <Pill tone={TONE[view.state]}>{view.state}</Pill>
                <span>
                  {plan.scenario} at {plan.rate_per_s}/s for {plan.duration_s} s
                  {view.exit_code !== undefined && ` (k6 exit code ${view.exit_code}${view.exit_code === 99 ? ': a threshold was crossed' : ''})`}
                </span>
              </div>
              <div
                className={styles.progress}
                role="progressbar"
                aria-label="Run progress"
                aria-valuemin={0}
                aria-valuemax={100}
                aria-valuenow={Math.round(progress * 100)}
              >
                <div className={styles.progressBar} style={{ width: `${(progress * 100).toFixed(1)}%` }} />
              </div>
              {!active && view.output.length > 0 && (
                <details className={styles.output}>
                  <summary>k6’s last lines</summary>
                  <pre>{view.output.join('\n')}</pre>
                </details>
              )}
            </div>
          )}
        </form>
      )}
    </Panel>
  );
}
