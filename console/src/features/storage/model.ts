import type { EngineActivity, EngineStats, NodeStats } from '../../api/types';

/** How full the active memtable is, 0..1 (0 when the limit is unknown). */
export function memtableFill(engine: EngineStats): number {
  return engine.memtable_limit_bytes > 0 ? Math.min(1, engine.memtable_bytes / engine.memtable_limit_bytes) : 0;
}

export interface Amplification {
  /** Table bytes written (flushes and compactions) per byte callers wrote; null before any write. */
  write: number | null;
  /** Tables consulted per point lookup; null before any lookup. */
  read: number | null;
  /** Bytes in every level per byte in the largest: what a fully compacted tree would shed. */
  space: number | null;
}

export function amplification(engine: EngineStats): Amplification {
  const written = engine.flush_written_bytes + engine.compaction_written_bytes;
  const total = engine.levels.reduce((sum, l) => sum + l.bytes, 0);
  const largest = engine.levels.reduce((max, l) => Math.max(max, l.bytes), 0);
  return {
    write: engine.user_written_bytes > 0 ? written / engine.user_written_bytes : null,
    read: engine.gets > 0 ? engine.table_probes / engine.gets : null,
    space: largest > 0 ? total / largest : null,
  };
}

/** A compaction as the view lists it: finished, or started and not finished yet. */
export interface CompactionRow {
  state: 'running' | 'done';
  atMs: number;
  level: number;
  outputLevel: number;
  filesIn: number;
  bytesIn: number;
  filesOut: number;
  bytesOut: number;
  trivialMove: boolean;
  durationMs: number | null;
}

/**
 * The node's compactions, newest first: every finished one, and a started one that no
 * later finish of the same levels closed (the engine runs one at a time per level pair).
 */
export function compactions(activity: readonly EngineActivity[]): CompactionRow[] {
  const rows: CompactionRow[] = [];
  const open = new Map<string, EngineActivity>();
  for (const a of activity) {
    const key = `${a.level}->${a.output_level}`;
    if (a.kind === 'compaction_started') open.set(key, a);
    if (a.kind === 'compaction') {
      open.delete(key);
      rows.push({
        state: 'done',
        atMs: a.at_ms,
        level: a.level,
        outputLevel: a.output_level,
        filesIn: a.files_in,
        bytesIn: a.bytes_in,
        filesOut: a.files_out,
        bytesOut: a.bytes_out,
        trivialMove: a.trivial_move,
        durationMs: a.duration_ms,
      });
    }
  }
  for (const a of open.values()) {
    rows.push({
      state: 'running',
      atMs: a.at_ms,
      level: a.level,
      outputLevel: a.output_level,
      filesIn: a.files_in,
      bytesIn: a.bytes_in,
      filesOut: 0,
      bytesOut: 0,
      trivialMove: false,
      durationMs: null,
    });
  }
  return rows.sort((a, b) => b.atMs - a.atMs);
}

/** Flushes and stalls, newest first. */
export function flushesAndStalls(activity: readonly EngineActivity[]): EngineActivity[] {
  return activity.filter((a) => a.kind === 'flush' || a.kind === 'stall').sort((a, b) => b.at_ms - a.at_ms);
}

/** Seconds writers were held up (stopped or slowed) since the node started. */
export function stallSeconds(stats: NodeStats): number {
  return stats.engine.stall_seconds + stats.engine.slowdown_seconds;
}
