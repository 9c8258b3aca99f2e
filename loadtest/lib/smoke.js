// What the smoke scenarios (smoke.js over REST, smoke-grpc.js over gRPC) share: a few VUs for a few
// seconds (SMOKE_VUS, SMOKE_DURATION), or with SMOKE_RATE that many iterations a second (an open
// model, as the console's load runner starts it), and a key prefix of their own.

// One prefix per run (SMOKE_RUN_ID, or a random one), so runs never see each other's keys.
export const RUN = __ENV.SMOKE_RUN_ID || `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e9).toString(36)}`;

// The options of a smoke run: scenario `name` with constant VUs, and the script's own thresholds.
export function smokeOptions(name, thresholds) {
  return {
    scenarios: {
      [name]: __ENV.SMOKE_RATE
        ? {
            executor: 'constant-arrival-rate',
            rate: Number(__ENV.SMOKE_RATE),
            timeUnit: '1s',
            duration: __ENV.SMOKE_DURATION || '10s',
            preAllocatedVUs: Number(__ENV.SMOKE_VUS || 4),
            maxVUs: Math.max(Number(__ENV.SMOKE_VUS || 4), 50),
            gracefulStop: '5s',
          }
        : {
            executor: 'constant-vus',
            vus: Number(__ENV.SMOKE_VUS || 4),
            duration: __ENV.SMOKE_DURATION || '10s',
            gracefulStop: '5s',
          },
    },
    thresholds,
    // Show p(99) in the end-of-test summary (it is what the thresholds check).
    summaryTrendStats: ['avg', 'min', 'med', 'p(90)', 'p(95)', 'p(99)', 'max'],
  };
}
