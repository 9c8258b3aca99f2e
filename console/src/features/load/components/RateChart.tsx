import { useEffect, useRef, useState } from 'react';
import { CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import { formatClock } from '../../../lib/format';
import styles from './LoadPage.module.css';

export interface Series {
  key: string;
  label: string;
  color: string;
}

interface RateChartProps {
  /** Points in time order; each has `atMs` and one number per series key. */
  data: readonly Record<string, number>[];
  series: readonly Series[];
  unit: string;
  label: string;
}

const HEIGHT = 200;
/** Before the container is measured (and where nothing measures, as in tests). */
const DEFAULT_WIDTH = 640;

function useWidth() {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(DEFAULT_WIDTH);
  useEffect(() => {
    const element = ref.current;
    if (!element || typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver((entries) => {
      const measured = entries[0]?.contentRect.width;
      if (measured) setWidth(Math.floor(measured));
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
    };
  }, []);
  return { ref, width };
}

/** Ticks on whole seconds, about five of them, so no two show the same clock time. */
export function secondTicks(data: readonly Record<string, number>[]): number[] {
  const times = data.map((d) => d.atMs ?? 0);
  if (times.length === 0) return [];
  const first = Math.min(...times);
  const last = Math.max(...times);
  const step = Math.max(1000, Math.ceil((last - first) / 4 / 1000) * 1000);
  const ticks: number[] = [];
  for (let t = Math.ceil(first / 1000) * 1000; t <= last; t += step) ticks.push(t);
  return ticks;
}

/** A line per series over time; the axis shows the wall clock. */
export function RateChart({ data, series, unit, label }: RateChartProps) {
  const { ref, width } = useWidth();
  return (
    <div ref={ref} className={styles.chart} role="img" aria-label={label} data-testid="rate-chart">
      <LineChart width={width} height={HEIGHT} data={[...data]} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
        <CartesianGrid stroke="#e1e5eb" strokeDasharray="3 3" />
        <XAxis
          dataKey="atMs"
          type="number"
          domain={['dataMin', 'dataMax']}
          ticks={secondTicks(data)}
          tickFormatter={(ms: number) => formatClock(ms).slice(0, 8)}
          fontSize={11}
        />
        <YAxis fontSize={11} width={48} unit={unit} allowDecimals={false} />
        <Tooltip
          labelFormatter={(ms) => formatClock(Number(ms))}
          formatter={(value) => `${Number(value).toFixed(1)} ${unit}`}
        />
        <Legend wrapperStyle={{ fontSize: 12 }} />
        {series.map((s) => (
          <Line
            key={s.key}
            dataKey={s.key}
            name={s.label}
            stroke={s.color}
            dot={false}
            isAnimationActive={false}
            strokeWidth={2}
            connectNulls
          />
        ))}
      </LineChart>
    </div>
  );
}
