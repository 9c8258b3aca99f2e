import '@testing-library/jest-dom/vitest';

// Views open their event streams with the `eventsource` package (src/lib/openEventSource.ts);
// in tests it is the hand-driven MockEventSource. src/lib/openEventSource.test.ts unmocks it.
vi.mock('eventsource', async () => ({
  EventSource: (await import('./test/MockEventSource')).MockEventSource,
}));

// The live stream's history outlives a view in the app; every test starts without one.
// Every test starts signed out (no token in localStorage). The stream module is imported
// here only when a test runs, after the test file's own module mocks (vi.mock of
// `eventsource`) are in place.
beforeEach(async () => {
  const { forgetStatsHistory } = await import('./lib/useStatsStream');
  forgetStatsHistory();
  window.localStorage.clear();
});
