import '@testing-library/jest-dom/vitest';
import { forgetStatsHistory } from './lib/useStatsStream';

// The live stream's history outlives a view in the app; every test starts without one.
beforeEach(() => {
  forgetStatsHistory();
});
