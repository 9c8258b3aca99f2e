import '@testing-library/jest-dom/vitest';
import { forgetStatsHistory } from './lib/useStatsStream';

// The live stream's history outlives a view in the app; every test starts without one.
// Every test starts signed out (no token in localStorage).
beforeEach(() => {
  forgetStatsHistory();
  window.localStorage.clear();
});
