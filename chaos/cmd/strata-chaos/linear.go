package main

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/strata/chaos/cluster"
	"github.com/strata/chaos/history"
)

type linearOpts struct {
	common
	runs     int
	duration time.Duration
	clients  int
	regKeys  int
	listKeys int
	// counterKeys are incremented by read + CAS (double-application check).
	counterKeys int
	// bankAccounts are the bank workload's accounts (transactions; 0: off).
	bankAccounts int
	// grpcClients of the clients speak gRPC, the others REST.
	grpcClients int
	// readMode is the nodes' --read-mode (safe or lease).
	readMode  string
	maxOps    int
	faults    string
	interval  time.Duration
	opTimeout time.Duration
	// splitAt are the keys the key space is split at before the load.
	splitAt string
}

// runResult is what one run did and found; it is written as result.json.
type runResult struct {
	Run         int            `json:"run"`
	Seed        int64          `json:"seed"`
	Ops         int            `json:"ops"`
	Outcomes    map[string]int `json:"outcomes"`
	Faults      []string       `json:"faults"`
	Verdict     string         `json:"linearizable"`
	Violations  []string       `json:"violations"`
	Command     string         `json:"command"`
	Dir         string         `json:"dir"`
	DurationSec float64        `json:"duration_s"`
	// SnapshotCatchUps counts followers seen catching up by snapshot;
	// Members are the node ids in the configuration at the end.
	SnapshotCatchUps int   `json:"snapshot_catchups"`
	VotersReplaced   int   `json:"voters_replaced"`
	Members          []int `json:"members"`
	// Via counts operations by front end (rest, grpc); Duplicates counts
	// increments or list elements applied more than once.
	Via        map[string]int          `json:"via"`
	Duplicates int                     `json:"duplicates"`
	Counters   map[string]counterTally `json:"counters"`
	// Settled counts the counters' CASes that got an ambiguous answer and
	// then, sent again under their request id, a settling one; Unsettled
	// those no send settled.
	Settled   int64  `json:"settled"`
	Unsettled int64  `json:"unsettled"`
	ReadMode  string `json:"read_mode"`
	// Bank is what the bank workload did (nil: off).
	Bank *bankReport `json:"bank,omitempty"`
	// Ranges is how many ranges the cluster served at the end (with
	// -split-at: one more than the keys split at).
	Ranges int `json:"ranges"`
	// Canary is what the nodes' own consistency canaries checked.
	Canary canaryCounts `json:"canary"`
}

func cmdLinear(args []string) int {
	var o linearOpts
	fs := o.flagSet("linear", 22000)
	fs.IntVar(&o.runs, "runs", 1, "number of runs (seeds seed, seed+1, ...)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "load time per run")
	fs.IntVar(&o.clients, "clients", 6, "concurrent clients")
	fs.IntVar(&o.regKeys, "reg-keys", 4, "register keys (get/put/cas)")
	fs.IntVar(&o.listKeys, "list-keys", 2, "list-append keys (CAS read-modify-write)")
	fs.IntVar(&o.counterKeys, "counter-keys", 2, "counter keys (read + CAS increments; must equal the acknowledged ones)")
	fs.IntVar(&o.bankAccounts, "bank-accounts", 4, "bank accounts (transfers and audits in transactions; the total must hold; 0: off)")
	fs.IntVar(&o.grpcClients, "grpc-clients", -1, "how many of the clients speak gRPC (default: half, rounded down)")
	fs.StringVar(&o.readMode, "read-mode", "safe", "the nodes' --read-mode: safe or lease")
	fs.IntVar(&o.maxOps, "max-ops", 20000, "bound on recorded operations per run")
	fs.StringVar(&o.faults, "faults", "kill-leader,kill-follower,kill-random,pause-leader,pause-random,"+
		"partition-leader,partition-random,partition-one-way,delay-link,restart-all,membership-change,snapshot-catchup,"+
		"sigterm-leader,sigterm-random,rolling-restart,slow-fsync,snapshot-race,max-size",
		"nemesis faults (comma list, or none)")
	fs.DurationVar(&o.interval, "interval", 3*time.Second, "time between the start of two faults")
	fs.StringVar(&o.splitAt, "split-at", "", "keys to split the key space at before the load, comma-separated "+
		"(e.g. ctr/,list/,reg/: each workload's keys in a range of their own); the membership change fault is left out then")
	fs.DurationVar(&o.opTimeout, "op-timeout", 6*time.Second, "client timeout per operation (then ambiguous)")
	o.parse(fs, args)
	if o.grpcClients < 0 {
		o.grpcClients = o.clients / 2
	}
	if o.grpcClients > o.clients {
		fatalf("-grpc-clients %d is more than -clients %d", o.grpcClients, o.clients)
	}
	if o.readMode != "safe" && o.readMode != "lease" {
		fatalf("-read-mode must be safe or lease, not %q", o.readMode)
	}
	if o.bankAccounts == 1 || o.bankAccounts < 0 {
		fatalf("-bank-accounts must be 0 (off) or at least 2, not %d", o.bankAccounts)
	}
	fmt.Printf("strata-chaos linear: %d run(s) of %v, %d clients (%d gRPC, %d REST), read mode %s, faults %s; run dir %s\n",
		o.runs, o.duration, o.clients, o.grpcClients, o.clients-o.grpcClients, o.readMode, o.faults, o.runDir)
	if keys := splitKeys(o.splitAt); len(keys) > 0 {
		fmt.Printf("  the key space is split at %q before the load of each run\n", keys)
	}
	failed, duplicates, settled, unsettled := 0, 0, int64(0), int64(0)
	transfers, audits := int64(0), int64(0)
	var results []runResult
	for i := 0; i < o.runs; i++ {
		r := o.run(i, o.seed+int64(i))
		results = append(results, r)
		duplicates += r.Duplicates
		settled, unsettled = settled+r.Settled, unsettled+r.Unsettled
		if r.Bank != nil {
			transfers, audits = transfers+r.Bank.Transfers, audits+r.Bank.Audits
		}
		status := "ok"
		if len(r.Violations) > 0 {
			status = "VIOLATION"
			failed++
		}
		fmt.Printf("run %d seed %d: %s — %d ops %v via %v, faults %d (%d snapshot catch-ups, %d voters replaced), linearizable %s, %d duplicates, %d unknown outcomes settled by request id, %d not (%.0f s)\n",
			i, r.Seed, status, r.Ops, r.Outcomes, r.Via, len(r.Faults), r.SnapshotCatchUps, r.VotersReplaced, r.Verdict,
			r.Duplicates, r.Settled, r.Unsettled, r.DurationSec)
		fmt.Printf("  ranges: %d\n", r.Ranges)
		fmt.Printf("  canary: %s\n", r.Canary)
		fmt.Printf("  bank: %s\n", r.Bank)
		for _, f := range r.Faults {
			fmt.Printf("  fault %s\n", f)
		}
		for _, v := range r.Violations {
			fmt.Printf("  violation: %s\n", v)
		}
		if len(r.Violations) > 0 {
			fmt.Printf("  history and visualization: %s\n  reproduce: %s\n", r.Dir, r.Command)
		}
	}
	summary := filepath.Join(o.runDir, "summary.json")
	writeJSON(summary, results)
	fmt.Printf("summary: %d run(s), %d with violations, %d duplicates, %d unknown outcomes settled by request id, %d not; bank: %d transfers, %d audits checked; %s\n",
		o.runs, failed, duplicates, settled, unsettled, transfers, audits, summary)
	if failed > 0 {
		return 1
	}
	return 0
}

func (o *linearOpts) run(i int, seed int64) runResult {
	start := time.Now()
	sub := fmt.Sprintf("run-%d-seed-%d", i, seed)
	res := runResult{Run: i, Seed: seed, Command: commandLine(seed), Dir: filepath.Join(o.runDir, sub), ReadMode: o.readMode}
	cfg := o.config(sub, 3)
	// Three more node slots for membership changes, a small log compaction
	// policy so that snapshots are frequent, and every node's canary.
	cfg.Slots = 6
	cfg.NodeArgs = append([]string{"--compact-log-entries", fmt.Sprint(compactLogEntries),
		"--compact-keep-entries", fmt.Sprint(compactKeepEntries), "--read-mode", o.readMode}, canaryArgs()...)
	cfg.Track = atExit
	cl, err := cluster.Start(cfg)
	if err != nil {
		res.Violations = append(res.Violations, "cluster did not start: "+err.Error())
		return res
	}
	defer cl.Close()
	rng := rand.New(rand.NewSource(seed))
	rec := history.NewRecorder(o.maxOps)
	kv := gatewayClient(cl, o.opTimeout)
	gk, err := dialGRPC(cl.GatewayAddr(), o.opTimeout)
	if err != nil {
		res.Violations = append(res.Violations, "gRPC client: "+err.Error())
		return res
	}
	defer gk.Close()
	stores := []kvStore{kv, gk}
	canaries := watchCanaries(cl, time.Second)

	// Clients run until the deadline; the nemesis runs beside them. The
	// first grpcClients clients speak gRPC, the others REST.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	w := &workload{rec: rec, acked: &ackedAppends{elems: map[string]map[string]bool{}}, counters: newCounters(),
		extra: map[string]bool{}}
	if o.bankAccounts > 0 {
		// The accounts are opened before any client or fault starts.
		w.bank = newBank(o.bankAccounts)
		if err := w.bank.open(o.clients, kv, rec); err != nil {
			res.Violations = append(res.Violations, "bank: "+err.Error())
			w.bank = nil
		}
	}
	res.Violations = append(res.Violations, splitAt(cl, splitKeys(o.splitAt))...)
	for c := 0; c < o.clients; c++ {
		var store kvStore = kv
		if c < o.grpcClients {
			store = gk
		}
		wg.Add(1)
		go func(c int, seed int64) {
			defer wg.Done()
			o.client(c, rand.New(rand.NewSource(seed)), store, w, stop)
		}(c, rng.Int63())
	}
	nem := newNemesis(cl, rand.New(rand.NewSource(rng.Int63())), o.faults)
	nem.w, nem.stores, nem.client = w, stores, o.clients+1
	nemDone := make(chan struct{})
	go func() { defer close(nemDone); nem.run(o.interval, stop) }()
	time.Sleep(o.duration)
	close(stop)
	wg.Wait()
	<-nemDone
	res.Faults = nem.log
	res.Violations = append(res.Violations, nem.problems...)
	res.SnapshotCatchUps = nem.snapshots
	res.VotersReplaced = nem.replaced
	res.Members = cl.IDs()

	// Heal everything, then check convergence and read every key once more.
	if err := cl.HealAll(); err != nil {
		res.Violations = append(res.Violations, "restart after healing failed: "+err.Error())
	}
	if err := cl.WaitGatewayLeader(60 * time.Second); err != nil {
		res.Violations = append(res.Violations, "no leader after healing: "+err.Error())
	}
	state, err := cl.WaitConverged(30 * time.Second)
	if err != nil {
		res.Violations = append(res.Violations, "nodes did not converge after healing: "+err.Error())
	}
	res.Ranges = rangeCount(cl)
	if want := len(splitKeys(o.splitAt)) + 1; res.Ranges != want {
		res.Violations = append(res.Violations, fmt.Sprintf("the cluster serves %d ranges at the end, not %d", res.Ranges, want))
	}
	final := o.finalReads(kv, w)
	if w.bank != nil {
		res.Violations = append(res.Violations, w.bank.finish(o.clients, kv, rec, state)...)
	}
	if dead := cl.Exited(); len(dead) > 0 {
		res.Violations = append(res.Violations, fmt.Sprintf("nodes %v exited on their own", dead))
	}
	var canaryProblems []string
	res.Canary, canaryProblems = canaries.finish()
	res.Violations = append(res.Violations, canaryProblems...)

	ops := rec.Ops()
	res.Ops = len(ops)
	res.Outcomes, res.Via = map[string]int{}, map[string]int{}
	for k, v := range history.Counts(ops) {
		res.Outcomes[string(k)] = v
	}
	for _, op := range ops {
		res.Via[op.Via]++
	}
	_ = history.Save(filepath.Join(res.Dir, "history.json"), ops)
	lin, err := history.CheckLinearizable(ops, 2*time.Minute, filepath.Join(res.Dir, "history.html"))
	res.Verdict = string(lin.Verdict)
	switch {
	case err != nil:
		res.Violations = append(res.Violations, "visualization: "+err.Error())
	case lin.Verdict == porcupine.Illegal:
		res.Violations = append(res.Violations, fmt.Sprintf("history is not linearizable (%d ops checked, %d ambiguous); see history.html",
			lin.Checked, lin.Ambiguous))
	case lin.Verdict == porcupine.Unknown:
		res.Violations = append(res.Violations, "linearizability check timed out (inconclusive)")
	}
	appendViolations, appendDups := w.acked.check(final, state)
	res.Violations = append(res.Violations, appendViolations...)
	counterViolations, counterDups := w.counters.check(final)
	res.Violations = append(res.Violations, counterViolations...)
	res.Duplicates = appendDups + counterDups
	res.Counters = w.counters.snapshot()
	res.Settled, res.Unsettled = w.counters.Settled.Load(), w.counters.Unsettled.Load()
	if w.bank != nil {
		res.Bank = w.bank.report()
	}
	res.DurationSec = time.Since(start).Seconds()
	writeResult(res.Dir, res)
	return res
}

func regKey(i int) string  { return fmt.Sprintf("reg/%d", i) }
func listKey(i int) string { return fmt.Sprintf("list/%d", i) }

// workload is what every client shares in one run: the recorder and the
// tallies the checks after healing compare the final state with.
type workload struct {
	rec      *history.Recorder
	acked    *ackedAppends
	counters *counters
	// bank is the transaction workload (nil: off).
	bank    *bank
	batches atomic.Int64
	// extra are further keys written during the run (by the max-size
	// nemesis) that the final reads cover.
	mu    sync.Mutex
	extra map[string]bool
}

func (w *workload) addKey(k string) {
	w.mu.Lock()
	w.extra[k] = true
	w.mu.Unlock()
}

// client issues random operations through kv until stop: on register keys
// get, put, CAS and batches of puts; on list keys appends, each a read
// followed by CAS attempts; on counter keys increments, each a read
// followed by CAS attempts; on the bank's accounts transfers and audits,
// all transactions.
func (o *linearOpts) client(c int, rng *rand.Rand, kv kvStore, w *workload, stop chan struct{}) {
	seq := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		seq++
		switch r := rng.Intn(12); {
		case o.listKeys > 0 && r < 4:
			if !o.appendOnce(c, rng, kv, w, listKey(rng.Intn(o.listKeys)), fmt.Sprintf("%d.%d", c, seq)) {
				return
			}
			continue
		case o.counterKeys > 0 && r < 6:
			if !w.counters.increment(c, kv, w.rec, counterKey(rng.Intn(o.counterKeys))) {
				return
			}
			continue
		case w.bank != nil && r < 8:
			if !w.bank.step(c, rng, kv, w.rec) {
				return
			}
			continue
		}
		op := history.Op{Client: c, Key: regKey(rng.Intn(o.regKeys))}
		switch r := rng.Intn(20); {
		case r < 6:
			op.Kind = history.Get
		case r < 11:
			op.Kind, op.Value = history.Put, fmt.Sprintf("%d.%d", c, seq)
		case r < 17:
			op.Kind, op.Value = history.Cas, fmt.Sprintf("%d.%d", c, seq)
			if rng.Intn(4) == 0 {
				op.ExpectedAbsent = true
			} else {
				op.Expected = fmt.Sprintf("%d.%d", rng.Intn(o.clients), seq-rng.Intn(8))
			}
		default:
			// A batch of puts on two or more distinct register keys.
			var ops []history.Op
			for _, k := range rng.Perm(o.regKeys)[:min(o.regKeys, 2+rng.Intn(2))] {
				ops = append(ops, history.Op{Client: c, Key: regKey(k), Value: fmt.Sprintf("%d.%d.b", c, seq)})
			}
			if !issueBatch(kv, w.rec, ops, w.batches.Add(1)) {
				return
			}
			continue
		}
		if !issue(kv, w.rec, &op) {
			return
		}
	}
}

// appendOnce appends elem to the list at key: read, then CAS from what was
// read to that plus elem, again from the current value if the CAS lost, at
// most 8 attempts. The append takes effect exactly when one CAS succeeds;
// an ambiguous CAS ends the attempt (the element may or may not be there).
func (o *linearOpts) appendOnce(c int, rng *rand.Rand, kv kvStore, w *workload, key, elem string) bool {
	rec, acked := w.rec, w.acked
	read := history.Op{Client: c, Kind: history.Get, Key: key}
	if !issue(kv, rec, &read) {
		return false
	}
	if read.Result != history.Ok {
		return true
	}
	cur, exists := read.Got, read.Found
	for attempt := 0; attempt < 8; attempt++ {
		next := elem
		if exists {
			next = cur + " " + elem
		}
		op := history.Op{Client: c, Kind: history.Cas, Key: key, Expected: cur, ExpectedAbsent: !exists, Value: next}
		if !issue(kv, rec, &op) {
			return false
		}
		switch {
		case op.Result == history.Ok && op.Succeeded:
			acked.add(key, elem)
			return true
		case op.Result == history.Ok:
			cur, exists = op.Got, op.Found
		case op.Result == history.Unknown:
			acked.ambiguous(key, elem)
			return true
		default:
			time.Sleep(time.Duration(rng.Intn(50)) * time.Millisecond)
		}
	}
	return true
}

// finalReads reads every key through the gateway after healing and records
// the reads (client id -1 → shown as a separate client).
func (o *linearOpts) finalReads(kv kvStore, w *workload) map[string]history.Op {
	rec := w.rec
	out := map[string]history.Op{}
	var keys []string
	for i := 0; i < o.regKeys; i++ {
		keys = append(keys, regKey(i))
	}
	for i := 0; i < o.listKeys; i++ {
		keys = append(keys, listKey(i))
	}
	for i := 0; i < o.counterKeys; i++ {
		keys = append(keys, counterKey(i))
	}
	w.mu.Lock()
	for k := range w.extra {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	sort.Strings(keys[o.regKeys+o.listKeys+o.counterKeys:])
	for _, k := range keys {
		for attempt := 0; attempt < 20; attempt++ {
			op := history.Op{Client: o.clients, Kind: history.Get, Key: k}
			op.Call = rec.Now()
			kv.Get(&op)
			op.Return, op.Via = rec.Now(), kv.Kind()
			if op.Result == history.Ok {
				// The history holds long values by digest; the checks
				// below need the whole value.
				rec.Add(history.Compact(op))
				out[k] = op
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return out
}

// ackedAppends remembers which list elements were acknowledged (their CAS
// succeeded) and which are ambiguous.
type ackedAppends struct {
	mu    sync.Mutex
	elems map[string]map[string]bool // key → elem → acknowledged
}

func (a *ackedAppends) add(key, elem string) { a.set(key, elem, true) }

func (a *ackedAppends) ambiguous(key, elem string) { a.set(key, elem, false) }

func (a *ackedAppends) set(key, elem string, ack bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.elems[key] == nil {
		a.elems[key] = map[string]bool{}
	}
	a.elems[key][elem] = ack
}

// check: every acknowledged element is in the final list exactly once, no
// element appears that was never attempted, and the converged state of the
// nodes agrees with the final linearizable reads.
func (a *ackedAppends) check(final map[string]history.Op, state map[string]string) (v []string, duplicates int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var keys []string
	for k := range a.elems {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := final[k]
		if !ok {
			v = append(v, fmt.Sprintf("%s: no final read succeeded", k))
			continue
		}
		seen := map[string]int{}
		if f.Found {
			for _, e := range strings.Fields(f.Got) {
				seen[e]++
			}
		}
		lost := 0
		for e, ack := range a.elems[k] {
			if ack && seen[e] == 0 {
				lost++
				if lost <= 5 {
					v = append(v, fmt.Sprintf("%s: acknowledged append %q lost", k, e))
				}
			}
		}
		for e, n := range seen {
			if n > 1 {
				duplicates += n - 1
				v = append(v, fmt.Sprintf("%s: DUPLICATE: element %q appears %d times", k, e, n))
			}
			if _, ok := a.elems[k][e]; !ok {
				v = append(v, fmt.Sprintf("%s: element %q was never appended", k, e))
			}
		}
	}
	if state != nil {
		for k, f := range final {
			got, ok := state[k]
			if ok != f.Found || got != f.Got {
				v = append(v, fmt.Sprintf("%s: final linearizable read %q (found %v) differs from the converged state %q (found %v)",
					k, f.Got, f.Found, got, ok))
			}
		}
	}
	return v, duplicates
}
