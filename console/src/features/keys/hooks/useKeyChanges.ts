import { useEffect, useState } from 'react';
import { followEventStream } from '../../../lib/followEventStream';
import {
  parseChanges,
  parseProgress,
  parseWatchEnd,
  WATCH_PROGRESS_MS,
  watchUrl,
  type KeyChange,
} from '../api/watch';

/** How many of the latest changes the feed keeps. */
export const KEPT_CHANGES = 50;

/** Connections in a row that may fail to resume from an index before the feed gives
 * up on it and follows from now (the node refuses an index its history lost: 410,
 * which an EventSource reports only as a failed connection). */
export const RESUME_TRIES = 3;

export interface KeyChangesView {
  /** The latest changes, newest first. */
  changes: KeyChange[];
  /** Every change through this raft index has arrived; null before the first word. */
  through: number | null;
  /** Why the stream was last lost, while it is; null while it flows. */
  lost: string | null;
  /** Set when the feed had to start again from now (the history moved past it). */
  restarted: string | null;
}

interface FeedState {
  changes: KeyChange[];
  through: number | null;
}

const EMPTY: FeedState = { changes: [], through: null };

/**
 * The changes committed under `prefix` from the moment the view opens, live (mount a
 * new view for another prefix: the feed does not start over by itself). A lost
 * stream resumes from the index after the last one it was sent, so nothing is missed
 * or shown twice; if the node's history no longer holds that index, the feed says so
 * and goes on from now.
 */
export function useKeyChanges(prefix: string): KeyChangesView {
  const [feed, setFeed] = useState<FeedState>(EMPTY);
  const [lost, setLost] = useState<string | null>(null);
  const [restarted, setRestarted] = useState<string | null>(null);

  // A new prefix is a new feed: its view is mounted afresh (keyed by the prefix).
  useEffect(() => {
    // The index the next connection starts from; null: from now.
    let next: number | null = null;
    // Connections lost in a row without a word from the server.
    let failures = 0;
    const heard = () => {
      failures = 0;
      setLost(null);
    };
    return followEventStream({
      url: () => watchUrl(prefix, next),
      silenceLimitMs: WATCH_PROGRESS_MS * 3,
      signOfLife: 'progress',
      events: {
        changes: (data) => {
          const changes = parseChanges(data);
          const index = changes[0]?.index;
          if (index === undefined) return true;
          next = index + 1;
          setFeed((f) => ({
            changes: [...changes.reverse(), ...f.changes].slice(0, KEPT_CHANGES),
            through: index,
          }));
          heard();
          return true;
        },
        progress: (data) => {
          const index = parseProgress(data);
          next = index + 1;
          setFeed((f) => ({ ...f, through: index }));
          heard();
          return true;
        },
        ended: (data) => {
          const why = parseWatchEnd(data);
          if (why.code === 'COMPACTED') {
            next = null;
            setRestarted(`changes were missed: ${why.message}`);
          }
          return false;
        },
      },
      onLost: (reason) => {
        failures += 1;
        if (next !== null && failures >= RESUME_TRIES) {
          setRestarted(`could not resume from index ${next}; following from now`);
          next = null;
        }
        setLost(reason);
      },
    });
  }, [prefix]);

  return { changes: feed.changes, through: feed.through, lost, restarted };
}
