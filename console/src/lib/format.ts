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

/** Bytes in binary units with three significant digits: 1536 → "1.50 KiB". */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toPrecision(3)} ${units[unit]}`;
}

/** A duration in milliseconds, shortest readable: 850 → "850 ms", 4200 → "4.2 s", 7260000 → "2 h 1 min". */
export function formatDurationMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ${Math.floor(s % 60)} s`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}
