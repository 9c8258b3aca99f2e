/** Wall-clock time with milliseconds, e.g. "14:03:07.215", in the viewer's time zone. */
export function formatClock(epochMs: number): string {
  const date = new Date(epochMs);
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

/** Group digits so long raft indexes stay readable: 1234567 → "1,234,567". */
export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}
