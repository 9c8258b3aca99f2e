import type { EngineActivity } from '../../api/types';
import { compactions } from './model';

function activity(kind: EngineActivity['kind'], atMs: number, level = 0): EngineActivity {
  return {
    kind,
    at_ms: atMs,
    level,
    output_level: level + 1,
    files_in: 4,
    bytes_in: 4096,
    files_out: kind === 'compaction' ? 1 : 0,
    bytes_out: kind === 'compaction' ? 4000 : 0,
    trivial_move: false,
    duration_ms: kind === 'compaction' ? 12.5 : 0,
    stopped: false,
  };
}

describe('compactions', () => {
  it('lists a started compaction as running until its finish arrives, newest first', () => {
    // Proves the pairing: a finish closes the start of the same levels; a later start
    // without a finish is the running one; the finished one keeps its bytes and time.
    const rows = compactions([
      activity('compaction_started', 1_000),
      activity('compaction', 1_050),
      activity('flush', 1_100),
      activity('compaction_started', 2_000),
    ]);
    expect(rows.map((r) => r.state)).toEqual(['running', 'done']);
    expect(rows[1]).toMatchObject({ bytesIn: 4096, bytesOut: 4000, durationMs: 12.5, level: 0, outputLevel: 1 });
  });
});
