import { CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import { formatBytes, formatClock } from '../../../lib/format';
import type { CompactionPoint } from '../hooks/compactionSeries';
import styles from './StoragePage.module.css';

const COLOURS = ['#2f6fe0', '#c9372c', '#14733e', '#8a5300', '#6b3fa0', '#0f7c8c'];

interface CompactionChartProps {
  points: readonly CompactionPoint[];
  nodeIds: readonly number[];
}

/** Compaction bytes written per second, one line per node, over the stream's history. */
export function CompactionChart({ points, nodeIds }: CompactionChartProps) {
  if (points.length < 2) {
    return <p className={styles.placeholder}>The chart starts after two stats frames (about two seconds).</p>;
  }
  return (
    <div className={styles.chart} data-testid="compaction-chart" data-points={points.length}>
      <LineChart responsive data={points} style={{ width: '100%', height: 220 }}>
        <CartesianGrid strokeDasharray="3 3" stroke="#e1e5eb" />
        <XAxis
          dataKey="atMs"
          type="number"
          domain={['dataMin', 'dataMax']}
          tickFormatter={(ms: number) => formatClock(ms).slice(0, 8)}
          fontSize={12}
        />
        <YAxis tickFormatter={(b: number) => `${formatBytes(b)}/s`} width={84} fontSize={12} />
        <Tooltip
          labelFormatter={(ms) => formatClock(Number(ms))}
          formatter={(value) => `${formatBytes(Number(value))}/s`}
        />
        <Legend />
        {nodeIds.map((id, i) => (
          <Line
            key={id}
            type="stepAfter"
            dataKey={`node${id}`}
            name={`node ${id}`}
            stroke={COLOURS[i % COLOURS.length]}
            dot={false}
            isAnimationActive={false}
            connectNulls
          />
        ))}
      </LineChart>
    </div>
  );
}
