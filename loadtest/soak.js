// Soak: YCSB A (50/50 read/update, zipfian) over REST at a steady arrival rate for 10 minutes by
// default, with the same thresholds as ycsb-rest.js; watch memory and latency drift on the nodes
// (`just soak` samples their memory and the gateway's answers every 10 s) and in the console.
//
//   RATE=200 k6 run loadtest/soak.js                 # 10 minutes
//   RATE=200 DURATION=2m k6 run loadtest/soak.js     # shorter
import { config, scenario, thresholds, summaryTrendStats } from './lib/ycsb.js';
export { setup, ycsb } from './ycsb-rest.js';

if (!__ENV.DURATION) __ENV.DURATION = '10m';
if (!__ENV.WORKLOAD) __ENV.WORKLOAD = 'a';
const cfg = config();

export const options = {
  scenarios: { soak: scenario('ycsb') },
  thresholds: thresholds(cfg),
  summaryTrendStats,
};
