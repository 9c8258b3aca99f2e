import type { ClusterStats, ElectionReason, RaftEvent } from '../api/types';

/** The events every member keeps (its stats' `raft_activity`) and those the stream delivered live, once each. */
export function mergeEvents(stats: ClusterStats | undefined, live: readonly RaftEvent[]): RaftEvent[] {
  const all = new Map<string, RaftEvent>();
  const add = (e: RaftEvent) => all.set(`${e.node_id}/${e.kind}/${e.term}/${e.at_ms}/${e.leader_id}`, e);
  for (const member of stats?.nodes ?? []) for (const e of member.stats?.raft_activity ?? []) add(e);
  for (const e of live) add(e);
  return [...all.values()].sort((a, b) => a.at_ms - b.at_ms);
}

/** How the election that made a leader began. */
export interface ElectionStart {
  nodeId: number;
  atMs: number;
  reason: ElectionReason | null;
  preVote: boolean;
}

/** One leader's time in office. */
export interface Era {
  term: number;
  leaderId: number;
  /** When the first member learned of this leader (its own clock). */
  startMs: number;
  /** When the next leader took over; null for the one in office. */
  endMs: number | null;
  /** The election that led here, when the members still keep it. */
  election: ElectionStart | null;
  /** From the first sign the previous leader was gone (a member losing it, or standing) to this one's start. */
  leaderlessMs: number | null;
  /** When that leaderless window began. */
  leaderlessFromMs: number | null;
}

function isLoss(e: RaftEvent): boolean {
  return (e.kind === 'leader_changed' && e.leader_id === 0) || e.kind === 'election_started';
}

/**
 * The leaders in order from the members' events: each (term, leader) starts when the
 * first member reports it (a `leader_changed` to it, or its own change to leader), and
 * ends when the next starts. The window between is leaderless from the first member
 * that followed the previous leader losing it (a node that just started, knowing no
 * leader yet, does not count, nor a loss after which a member heard from that leader
 * again); the election is the one the new leader started.
 */
export function eras(events: readonly RaftEvent[]): Era[] {
  const starts = new Map<string, { term: number; leaderId: number; startMs: number }>();
  for (const e of events) {
    let leaderId = 0;
    if (e.kind === 'leader_changed' && e.leader_id !== 0) leaderId = e.leader_id;
    if (e.kind === 'role_changed' && e.role === 'leader') leaderId = e.node_id;
    if (leaderId === 0) continue;
    const key = `${e.term}/${leaderId}`;
    const known = starts.get(key);
    if (!known || e.at_ms < known.startMs) starts.set(key, { term: e.term, leaderId, startMs: e.at_ms });
  }
  const ordered = [...starts.values()].sort((a, b) => a.startMs - b.startMs || a.term - b.term);
  // Whom each node followed just before each event, replayed in time order.
  const following = new Map<number, number>();
  const followedBefore = new Map<RaftEvent, number>();
  for (const e of events) {
    followedBefore.set(e, following.get(e.node_id) ?? 0);
    if (e.kind === 'leader_changed') following.set(e.node_id, e.leader_id);
    if (e.kind === 'role_changed' && e.role === 'leader') following.set(e.node_id, e.node_id);
  }
  return ordered.map((era, i) => {
    const previous = ordered[i - 1];
    const next = ordered[i + 1];
    const after = previous?.startMs ?? -Infinity;
    const between = events.filter((e) => e.at_ms > after && e.at_ms <= era.startMs);
    // The window opens at the first loss by a member that followed the previous leader,
    // unless someone heard from that leader again afterwards (a member whose timer ran
    // out while the leader was still in office): then it opens at the next loss.
    let loss: RaftEvent | undefined;
    for (const e of between) {
      if (isLoss(e) && (previous === undefined || followedBefore.get(e) === previous.leaderId)) {
        loss ??= e;
      } else if (previous && e.kind === 'leader_changed' && e.leader_id === previous.leaderId && e.term === previous.term) {
        loss = undefined;
      }
    }
    const stood = between.filter((e) => e.kind === 'election_started');
    const won = [...stood].reverse().find((e) => e.node_id === era.leaderId) ?? stood.at(-1);
    return {
      term: era.term,
      leaderId: era.leaderId,
      startMs: era.startMs,
      endMs: next?.startMs ?? null,
      election: won
        ? {
            nodeId: won.node_id,
            atMs: won.at_ms,
            reason: won.election?.reason ?? null,
            preVote: won.election?.pre_vote ?? false,
          }
        : null,
      leaderlessMs: loss ? era.startMs - loss.at_ms : null,
      leaderlessFromMs: loss?.at_ms ?? null,
    };
  });
}

export const REASON_LABEL: Record<ElectionReason, string> = {
  leader_lost: 'leader lost',
  timeout: 'timeout',
  transfer: 'transfer',
};
