import { act } from '@testing-library/react';
import failoverText from './recorded/failover.json?raw';
import incidentText from './recorded/incident.json?raw';
import membershipText from './recorded/membership.json?raw';
import storageText from './recorded/storage.json?raw';
import type { MockEventSource } from './MockEventSource';

// Frames a real three-node cluster sent over GET /v1/cluster/events, recorded by
// e2e/record-fixtures.mjs (`storage`: writes until the nodes flushed, then a requested
// compaction; `failover`: kill -9 of the leader and the election after it; `incident`:
// the same under a write load, with the gateway's counters in the stats; `membership`:
// a leadership transfer, then a follower removed, added back as a learner and promoted).

/** One recorded frame: the SSE event name, when it arrived, its data as sent. */
export interface RecordedFrame {
  event: 'status' | 'raft' | 'stats';
  receivedAtMs: number;
  data: unknown;
}

export const storageFrames = JSON.parse(storageText) as RecordedFrame[];
export const failoverFrames = JSON.parse(failoverText) as RecordedFrame[];
export const incidentFrames = JSON.parse(incidentText) as RecordedFrame[];
export const membershipFrames = JSON.parse(membershipText) as RecordedFrame[];

/**
 * Delivers `frames` on `source` in their order; with `clock`, the browser's clock reads
 * each frame's recorded arrival time as it is delivered (needs fake Date).
 */
export function replay(source: MockEventSource, frames: readonly RecordedFrame[], clock = false): void {
  act(() => {
    for (const frame of frames) {
      if (clock) vi.setSystemTime(frame.receivedAtMs);
      source.emit(frame.event, frame.data);
    }
  });
}

/** The data of the last frame named `event`. */
export function lastData(frames: readonly RecordedFrame[], event: RecordedFrame['event']): unknown {
  return [...frames].reverse().find((f) => f.event === event)?.data;
}
