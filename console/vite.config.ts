import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

// The gateway serves the built console (from the nodes) and the API on one origin
// (http://127.0.0.1:8080/), so the app only ever uses relative URLs. In development the
// same paths are proxied to a running cluster's gateway (STRATA_URL, default the demo
// cluster's), which keeps the code identical in both setups.
const gateway = process.env.STRATA_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  base: '/',
  plugins: [react()],
  server: {
    host: '127.0.0.1',
    proxy: {
      '/v1': { target: gateway },
      '/health': { target: gateway },
      '/k6': { target: gateway },
      '/load': { target: gateway },
    },
  },
  preview: {
    host: '127.0.0.1',
    port: 5173,
    strictPort: true,
  },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['./src/setupTests.ts'],
    restoreMocks: true,
    unstubGlobals: true,
  },
});
