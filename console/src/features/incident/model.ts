import type { NodeRole } from '../../api/types';
import type { StatusSample } from '../../lib/statsStream';
import type { Era } from '../../lib/terms';

/** The time the incident view covers, `[fromMs, toMs]`. */
export interface Window {
  fromMs: number;
  toMs: number;
}

/** Around the latest change of leader: from a few seconds before the leader was lost to a few after the new one. */
export function incidentWindow(era: Era | undefined, nowMs: number, marginMs = 4000): Window {
  const from = era?.leaderlessFromMs;
  if (from === undefined || from === null || !era) return { fromMs: nowMs - 30_000, toMs: nowMs };
  return { fromMs: from - marginMs, toMs: Math.min(nowMs, era.startMs + marginMs * 2) };
}

/** A stretch of time a node reported one role (or could not be asked). */
export interface RoleSpan {
  fromMs: number;
  toMs: number;
  role: NodeRole;
  healthy: boolean;
}

/** Each node's role over time from the status frames, as `[from, to)` spans clipped to `window`. */
export function roleSpans(statuses: readonly StatusSample[], window: Window): Map<number, RoleSpan[]> {
  const lanes = new Map<number, RoleSpan[]>();
  statuses.forEach((sample, i) => {
    const fromMs = sample.receivedAtMs;
    const toMs = statuses[i + 1]?.receivedAtMs ?? window.toMs;
    if (toMs < window.fromMs || fromMs > window.toMs) return;
    for (const node of sample.status.nodes) {
      const spans = lanes.get(node.id) ?? [];
      const last = spans.at(-1);
      if (last?.role === node.role && last.healthy === node.healthy) {
        last.toMs = Math.min(toMs, window.toMs);
      } else {
        spans.push({ fromMs: Math.max(fromMs, window.fromMs), toMs: Math.min(toMs, window.toMs), role: node.role, healthy: node.healthy });
      }
      lanes.set(node.id, spans);
    }
  });
  return lanes;
}
