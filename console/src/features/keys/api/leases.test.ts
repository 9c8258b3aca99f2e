import { formatCountdown, remainingAt } from './leases';

describe('lease countdown', () => {
  it('counts the leader’s remaining TTL down by the time passed since it was read', () => {
    // Proves the browser subtracts only its own elapsed time from the leader's figure.
    expect(remainingAt(59967, 1000, 1000)).toBe(59967);
    expect(remainingAt(59967, 1000, 4000)).toBe(56967);
  });

  it('never goes below zero, nor above the reading when the clock is behind it', () => {
    expect(remainingAt(2000, 1000, 10000)).toBe(0);
    expect(remainingAt(2000, 5000, 4000)).toBe(2000);
  });

  it('shows whole seconds rounded up, so 0 s means the TTL ran out', () => {
    expect(formatCountdown(59967)).toBe('1 min 00 s');
    expect(formatCountdown(59000)).toBe('59 s');
    expect(formatCountdown(56001)).toBe('57 s');
    expect(formatCountdown(1)).toBe('1 s');
    expect(formatCountdown(0)).toBe('0 s');
    expect(formatCountdown(61000)).toBe('1 min 01 s');
    expect(formatCountdown(2 * 3600_000 + 5 * 60_000)).toBe('2 h 05 min');
    expect(formatCountdown(365 * 24 * 3600_000)).toBe('365 d 0 h');
  });
});
