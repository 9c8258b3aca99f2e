// Shared YCSB pieces for the k6 scenarios: workload mixes A–F, key choice (uniform, scrambled
// zipfian, latest), key and value shapes, the open-model scenario options and the thresholds.
// Protocol scripts (ycsb-rest.js, ycsb-grpc.js) only say how one operation is sent.
//
// The same generator as storage/bench (strata-bench) so k6 and the Rust tool load alike.
import { Rate, Trend, Counter } from 'k6/metrics';
import { waitReady, loadRecords } from './rest.js';

// Read, update, insert, scan, read-modify-write fractions (YCSB core workloads).
export const WORKLOADS = {
  a: { read: 0.5, update: 0.5, distribution: 'zipfian' },
  b: { read: 0.95, update: 0.05, distribution: 'zipfian' },
  c: { read: 1.0, distribution: 'zipfian' },
  d: { read: 0.95, insert: 0.05, distribution: 'latest' },
  e: { scan: 0.95, insert: 0.05, distribution: 'zipfian' },
  f: { read: 0.5, rmw: 0.5, distribution: 'zipfian' },
};

// One error rate and one latency trend, tagged by op, for both protocols (gRPC has no built-in
// "failed request" rate).
export const opErrors = new Rate('ycsb_errors');
export const opDuration = new Trend('ycsb_op_duration', true);
export const notFound = new Counter('ycsb_not_found');

// Zipfian ranks in [0, n) with skew theta (Gray et al.; YCSB's ZipfianGenerator).
export class Zipfian {
  constructor(n, theta) {
    if (!(n >= 1) || !(theta > 0 && theta < 1)) throw new Error(`zipfian(n=${n}, theta=${theta})`);
    let zetaN = 0;
    for (let i = 1; i <= n; i++) zetaN += 1 / Math.pow(i, theta);
    const zeta2 = 1 + (n >= 2 ? 1 / Math.pow(2, theta) : 0);
    this.n = n;
    this.theta = theta;
    this.alpha = 1 / (1 - theta);
    this.zetaN = zetaN;
    this.eta = n <= 2 ? 1 : (1 - Math.pow(2 / n, 1 - theta)) / (1 - zeta2 / zetaN);
  }

  next() {
    const u = Math.random();
    const uz = u * this.zetaN;
    if (uz < 1) return 0;
    if (uz < 1 + Math.pow(0.5, this.theta)) return Math.min(1, this.n - 1);
    const rank = Math.floor(this.n * Math.pow(this.eta * u - this.eta + 1, this.alpha));
    return Math.min(rank, this.n - 1);
  }
}

// FNV-1a (32-bit) of an integer: scatters zipfian ranks over the key space.
export function fnv1a(x) {
  let h = 0x811c9dc5;
  for (let i = 0; i < 4; i++) {
    h ^= (x >>> (i * 8)) & 0xff;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function randomValue(size) {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < size; i++) s += chars[Math.floor(Math.random() * chars.length)];
  return s;
}

// Reads the YCSB settings from the environment.
export function config() {
  const workload = (__ENV.WORKLOAD || 'a').toLowerCase();
  if (!WORKLOADS[workload]) throw new Error(`WORKLOAD must be one of a-f, got ${workload}`);
  const run = __ENV.RUN_ID || `${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
  return {
    workload,
    records: Number(__ENV.RECORDS || 1000),
    distribution: __ENV.DISTRIBUTION || WORKLOADS[workload].distribution,
    theta: Number(__ENV.THETA || 0.99),
    valueSize: Number(__ENV.VALUE_SIZE || 256),
    maxScan: Number(__ENV.MAX_SCAN || 100),
    consistency: __ENV.READ_CONSISTENCY || 'linearizable',
    prefix: `ycsb/${run}/`,
  };
}

// Generates operations for one VU. Records are `<prefix>k<7 digits>`; inserts go to this VU's own
// `<prefix>i<vu>-<n>` keys, and `latest` reads favour this VU's newest inserts, then the newest
// records (k6 VUs share no memory, so "latest" is per VU).
export class Generator {
  constructor(cfg, vu) {
    this.cfg = cfg;
    this.vu = vu;
    this.mix = WORKLOADS[cfg.workload];
    this.zipf = cfg.distribution === 'uniform' ? null : new Zipfian(cfg.records, cfg.theta);
    this.inserted = 0;
    this.value = randomValue(cfg.valueSize);
  }

  recordKey(i) {
    return `${this.cfg.prefix}k${String(i).padStart(7, '0')}`;
  }

  insertKey(n) {
    return `${this.cfg.prefix}i${this.vu}-${String(n).padStart(7, '0')}`;
  }

  // The exclusive end of the record range ('l' follows 'k').
  recordsEnd() {
    return `${this.cfg.prefix}l`;
  }

  pickKey() {
    const n = this.cfg.records;
    switch (this.cfg.distribution) {
      case 'uniform':
        return this.recordKey(Math.floor(Math.random() * n));
      case 'latest': {
        const rank = this.zipf.next();
        if (rank < this.inserted) return this.insertKey(this.inserted - 1 - rank);
        return this.recordKey(n - 1 - ((rank - this.inserted) % n));
      }
      default:
        return this.recordKey(fnv1a(this.zipf.next()) % n);
    }
  }

  next() {
    let p = Math.random();
    const m = this.mix;
    if ((p -= m.read || 0) < 0) return { op: 'read', key: this.pickKey() };
    if ((p -= m.update || 0) < 0) return { op: 'update', key: this.pickKey(), value: this.value };
    if ((p -= m.insert || 0) < 0) {
      const key = this.insertKey(this.inserted);
      this.inserted += 1;
      return { op: 'insert', key, value: this.value };
    }
    if ((p -= m.scan || 0) < 0) {
      const limit = 1 + Math.floor(Math.random() * this.cfg.maxScan);
      return { op: 'scan', start: this.pickKey(), end: this.recordsEnd(), limit };
    }
    return { op: 'rmw', key: this.pickKey(), value: this.value };
  }
}

// Records one operation's outcome in the shared metrics.
export function record(op, ok, ms) {
  opErrors.add(!ok, { op });
  if (ok) opDuration.add(ms, { op });
}

// The open-model scenario from the environment:
//   RATE=500 DURATION=30s                   -> constant-arrival-rate
//   STAGES=100:10s,800:30s,0:5s [START_RATE] -> ramping-arrival-rate
// PRE_VUS / MAX_VUS size the VU pool (an open model needs spare VUs when latency grows;
// `dropped_iterations` counts arrivals that found no free VU).
export function scenario(exec) {
  const preAllocatedVUs = Number(__ENV.PRE_VUS || 20);
  const maxVUs = Number(__ENV.MAX_VUS || 200);
  if (__ENV.STAGES) {
    const stages = __ENV.STAGES.split(',').map((s) => {
      const [target, duration] = s.split(':');
      return { target: Number(target), duration };
    });
    return {
      executor: 'ramping-arrival-rate',
      exec,
      startRate: Number(__ENV.START_RATE || 0),
      timeUnit: '1s',
      preAllocatedVUs,
      maxVUs,
      stages,
      gracefulStop: '10s',
    };
  }
  return {
    executor: 'constant-arrival-rate',
    exec,
    rate: Number(__ENV.RATE || 100),
    timeUnit: '1s',
    duration: __ENV.DURATION || '30s',
    preAllocatedVUs,
    maxVUs,
    gracefulStop: '10s',
  };
}

// Error rate and p99 thresholds, overall and per operation (P99_MS, ERROR_RATE).
export function thresholds(cfg) {
  const p99 = Number(__ENV.P99_MS || 250);
  const errorRate = Number(__ENV.ERROR_RATE || 0.01);
  const t = {
    ycsb_errors: [`rate<${errorRate}`],
    ycsb_op_duration: [`p(99)<${p99}`],
  };
  const m = WORKLOADS[cfg.workload];
  for (const op of ['read', 'update', 'insert', 'scan', 'rmw']) {
    if (m[op]) t[`ycsb_op_duration{op:${op}}`] = [`p(99)<${p99}`];
  }
  return t;
}

export const summaryTrendStats = ['avg', 'min', 'med', 'p(90)', 'p(99)', 'p(99.9)', 'max'];

// The options of a YCSB run over `protocol` (rest or grpc): the open-model scenario `ycsb_<workload>_<protocol>`
// calling the script's `ycsb` function, and the thresholds.
export function ycsbOptions(cfg, protocol) {
  return {
    scenarios: { [`ycsb_${cfg.workload}_${protocol}`]: scenario('ycsb') },
    thresholds: thresholds(cfg),
    summaryTrendStats,
  };
}

// setup() of a YCSB run: waits for the cluster behind `base`, loads the records over REST (the gateway
// serves REST and gRPC on one port) and returns the data every iteration gets.
export function loadRun(cfg, base) {
  waitReady(base);
  const g = new Generator(cfg, 0);
  loadRecords(base, cfg.records, (i) => g.recordKey(i), randomValue(cfg.valueSize));
  return { cfg };
}
