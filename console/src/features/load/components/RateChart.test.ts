import { secondTicks } from './RateChart';

describe('secondTicks', () => {
  it('puts about five ticks on distinct whole seconds', () => {
    // Proves a short span of samples never labels two ticks with the same clock time.
    expect(secondTicks([{ atMs: 1500 }, { atMs: 2200 }, { atMs: 2900 }])).toEqual([2000]);
    expect(secondTicks([{ atMs: 0 }, { atMs: 20_000 }])).toEqual([0, 5000, 10_000, 15_000, 20_000]);
    expect(secondTicks([])).toEqual([]);
  });
});
