# Strata's one entry point. `./dev <recipe>` installs `just` and runs these.
set shell := ["bash", "-euo", "pipefail", "-c"]

root := justfile_directory()
tools := env("STRATA_TOOLS_DIR", root / ".tools")
target := env("CARGO_TARGET_DIR", root / "storage/target")
venv := tools / "venv"
envoy := venv / "bin/envoy"
k6 := tools / "bin/k6"
k6_version := "v1.8.1"
# kustomize, which test-deploy builds deploy/k8s with (its output is validated like the files).
kustomize := tools / "bin/kustomize"
kustomize_version := "v5.8.1"
# The trace viewer `up traces=1` runs: Jaeger, built from the module pinned in deploy/local/jaeger.
jaeger := tools / "bin/jaeger"
run := root / ".run"
# The cluster launcher (storage/harness); debug for the test recipes, release for `up`.
cluster := target / "debug/strata-cluster"
cluster_release := target / "release/strata-cluster"
# Sourced by recipes that take key=value arguments.
kv := root / "just/kv-args.sh"

export PATH := tools / "bin" + ":" + venv / "bin" + ":" + env("PATH")
export CARGO_TARGET_DIR := target

# Recipes of each area live beside this file.
import 'just/engine.just'
import 'just/raft.just'
import 'just/bench.just'
import 'just/reliability.just'
import 'just/fuzz.just'

# List the recipes.
default:
    @just --list

# The gate (what CI runs, through .ci/run): setup, lints, then every test.
test: setup setup-system lint test-rust test-engine-long fuzz-smoke test-sim test-console test-gateway test-deploy compose-test test-metrics test-smoke test-e2e test-e2e-ops test-bench-smoke test-k6-inspect test-loadtest test-reliability

# Install everything the project needs into project-local folders (no root needed).
setup: setup-k6 setup-kustomize setup-console

# k6 into the tools folder, unless the pinned version is there.
setup-k6:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "{{k6}}" ] || ! "{{k6}}" version 2>/dev/null | grep -q "{{k6_version}}"; then
      echo "installing k6 {{k6_version}} into {{tools}}/bin"
      mkdir -p "{{tools}}/bin"
      GOBIN="{{tools}}/bin" GOFLAGS=-mod=mod go install "go.k6.io/k6@{{k6_version}}"
    fi

# (A stamp beside the binary names the version built; test-deploy's validate.sh checks `kustomize version` too.)
# kustomize into the tools folder, unless the pinned version is there.
setup-kustomize:
    #!/usr/bin/env bash
    set -euo pipefail
    stamp="{{kustomize}}.version"
    if [ ! -x "{{kustomize}}" ] || [ "$(cat "$stamp" 2>/dev/null)" != "{{kustomize_version}}" ] \
        || [ "$("{{kustomize}}" version 2>/dev/null)" != "{{kustomize_version}}" ]; then
      echo "installing kustomize {{kustomize_version}} into {{tools}}/bin"
      mkdir -p "{{tools}}/bin"
      GOBIN="{{tools}}/bin" GOFLAGS=-mod=mod go install "sigs.k8s.io/kustomize/kustomize/v5@{{kustomize_version}}"
      echo "{{kustomize_version}}" > "$stamp"
    fi

# (The first build takes some 15 minutes on 2 cores; later calls find the binary of the same go.mod and go.sum and return at once.)
# Jaeger (v2, the trace viewer of `up traces=1`) into the tools folder, unless the pinned build is there.
setup-jaeger:
    #!/usr/bin/env bash
    set -euo pipefail
    stamp="{{jaeger}}.sha"
    want="$(cat deploy/local/jaeger/go.mod deploy/local/jaeger/go.sum | sha256sum | cut -d' ' -f1)"
    if [ ! -x "{{jaeger}}" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
      echo "building Jaeger ($(grep -o 'jaegertracing/jaeger v[0-9.]*' deploy/local/jaeger/go.mod)) into {{tools}}/bin; the first time takes some 15 minutes on 2 cores"
      mkdir -p "{{tools}}/bin"
      cd deploy/local/jaeger && go build -o "{{jaeger}}" github.com/jaegertracing/jaeger/cmd/jaeger
      echo "$want" > "$stamp"
    fi

# The console's npm packages, when its lock file changed.
setup-console:
    #!/usr/bin/env bash
    set -euo pipefail
    cd console
    if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      npm ci --no-audit --no-fund
    fi

# Build the node, the CLI and the cluster launcher (optimized).
build:
    cd storage && cargo build --release --bins

# Build the console bundle.
console-build: setup-console
    cd console && npm run build

# (Against the demo cluster of `up` unless STRATA_URL names another gateway.)
# The console's Vite dev server with hot reload on http://127.0.0.1:5173/, the API proxied to a running cluster.
console-dev: setup-console
    cd console && npm run dev

# (key=value: traces (0; 1 also starts Jaeger, which Envoy and every node export to, and prints its URL),
#  tls (0; 1 serves the gateway over TLS and the nodes over mutual TLS, with a CA of the cluster's own))
# Start 3 nodes (serving the console) + Envoy in the background; returns once healthy.
[positional-arguments]
up *args: build console-build setup-k6
    #!/usr/bin/env bash
    set -euo pipefail
    traces=0
    tls=0
    source "{{kv}}" up "traces tls" "$@"
    viewer=()
    case "$traces" in
      0) ;;
      1) just setup-jaeger; viewer=(--traces --jaeger "{{jaeger}}") ;;
      *) echo "up: traces is 0 or 1, not '$traces'" >&2; exit 2 ;;
    esac
    # The gateway speaks RESP on 16379 and the nodes on 16380-16382 (docs/resp.md), clear of a Redis
    # of the machine's own on 6379; and the memcached text protocol on 11311 and the nodes on
    # 11312-11314 (docs/memcached.md), clear of a memcached on 11211. tls=1: the cluster's own CA and
    # certificates (in .run/demo/tls), HTTPS, gRPC, RESP and memcached over TLS at the gateway,
    # mutual TLS to and between the nodes (their RESP and memcached ports too); no load runner (k6
    # would need the CA).
    protocols=(--resp-base-port 16380 --memcache-base-port 11312)
    case "$tls" in
      0) extra=(--load-port 6566 --k6 "{{k6}}" "${protocols[@]}") ;;
      1) extra=(--tls "${protocols[@]}") ;;
      *) echo "up: tls is 0 or 1, not '$tls'" >&2; exit 2 ;;
    esac
    "{{cluster_release}}" up --run-dir "{{run}}/demo" --envoy "{{envoy}}" --console-dir console/dist \
        "${extra[@]}" "${viewer[@]}"

# Stop everything `up` started.
down:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "{{cluster_release}}" ]; then echo "down: nothing to stop ({{cluster_release}} was never built)"; exit 0; fi
    "{{cluster_release}}" down --run-dir "{{run}}/demo"

# The latest PUT's trace in the demo cluster's trace viewer (`up traces=1`), as a tree of spans with their timings.
trace:
    "{{cluster_release}}" trace --run-dir "{{run}}/demo"

# Show the demo cluster as the CLI sees it.
status:
    "{{target}}/release/strata" status

# (The settings `up` writes in .run/demo/cli.env, the admin token's file among them; a variable
#  already set in the environment wins.)
# The CLI against the demo cluster, e.g. `./dev strata member list`.
[positional-arguments]
strata *args:
    #!/usr/bin/env bash
    set -euo pipefail
    settings="{{run}}/demo/cli.env"
    if [ -f "$settings" ]; then
      while IFS='=' read -r name value; do
        [ -n "$name" ] && [ -z "${!name:-}" ] && export "$name=$value"
      done < "$settings"
    fi
    if [ -n "${STRATA_TOKEN:-}" ]; then unset STRATA_TOKEN_FILE; fi
    exec "{{target}}/release/strata" "$@"

# Format what has a formatter: Rust (rustfmt), the chaos harness (gofmt), the console (eslint --fix).
fmt: setup-console
    cd storage && cargo fmt --all
    cd chaos && gofmt -w . ../examples/go
    cd console && npm run lint -- --fix

# Lints: rustfmt and gofmt checks, clippy, TypeScript and eslint.
lint: setup-console
    cd storage && cargo fmt --all -- --check
    cd storage && cargo clippy --workspace --all-targets -- -D warnings
    cd chaos && test -z "$(gofmt -l . ../examples/go)" || { gofmt -l . ../examples/go; echo "gofmt: the files above need formatting (./dev fmt)" >&2; exit 1; }
    cd console && npm run typecheck && npm run lint

# (Debian packages, so root: chromium for test-e2e, docker-compose for test-deploy's compose check,
# strace for disk-fault's fsync fault injection, redis-tools (redis-cli, redis-benchmark) for the
# Redis-protocol tests, libmemcached-tools (memccapable, memccp, memccat, memcslap) for the memcached
# ones. Not root: prints the apt-get line to run, and fails.)
# Install the system packages the suite needs that are missing.
setup-system:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    [ -x /usr/bin/chromium ] || missing+=(chromium)
    command -v docker-compose >/dev/null || missing+=(docker-compose)
    command -v strace >/dev/null || missing+=(strace)
    command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null || missing+=(redis-tools)
    command -v memccapable >/dev/null && command -v memcslap >/dev/null || missing+=(libmemcached-tools)
    if [ "${#missing[@]}" -eq 0 ]; then echo "setup-system: chromium, docker-compose, strace, redis-tools and libmemcached-tools are installed"; exit 0; fi
    if [ "$(id -u)" != 0 ]; then
      echo "setup-system: missing ${missing[*]}; as root run: apt-get install -y --no-install-recommends ${missing[*]}" >&2
      exit 1
    fi
    echo "setup-system: installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# Rust unit and multi-node integration tests (real processes behind real Envoy, Jaeger for the trace viewer's test, k6 for the load runner's).
test-rust: setup-jaeger setup-k6
    cd storage && cargo build --bins
    cd storage && STRATA_ENVOY="{{envoy}}" STRATA_JAEGER="{{jaeger}}" STRATA_K6="{{k6}}" STRATA_NODE_BIN="{{target}}/debug/strata-node" cargo test --workspace --exclude strata-fuzz

# Console unit tests.
test-console: setup-console
    cd console && mkdir -p node_modules/.cache && npm run check:api && npm test

# Gateway config generator tests.
test-gateway:
    ENVOY="{{envoy}}" python3 -m unittest discover -s gateway -p 'test_*.py' -v

# Static validation of docker-compose.yml, the Kubernetes manifests and the Envoy configs.
test-deploy: setup-kustomize
    #!/usr/bin/env bash
    set -euo pipefail
    command -v docker-compose >/dev/null || { echo "test-deploy: docker-compose is missing; run ./dev setup-system (as root)" >&2; exit 1; }
    ENVOY="{{envoy}}" KUSTOMIZE="{{kustomize}}" bash deploy/validate.sh

# (Needs root, to install Docker's Debian packages and start dockerd: otherwise it says why and passes.
# Every image is built here, on a debootstrap Debian with the host's tools (deploy/compose/local-images.sh),
# since no registry needs to be reachable; docs/compose.md has what it checks and its timings.)
# docker-compose.yml started for real: health, a put through Envoy, traces, k6 smoke, the leader's container killed.
compose-test:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ "$(id -u)" != 0 ]; then
      echo "compose-test: SKIPPED: needs root (to install Docker's packages and start dockerd); run it as root"
      exit 0
    fi
    just setup-k6 setup-jaeger
    cd storage && cargo build --bin strata && cd ..
    STRATA_CLI="{{target}}/debug/strata" STRATA_K6="{{k6}}" STRATA_JAEGER="{{jaeger}}" \
    STRATA_ENVOY_BIN="$("{{venv}}/bin/python" -c 'import envoy, pathlib; print(pathlib.Path(envoy.__file__).parent / "_bin" / "envoy")')" \
        bash deploy/compose/test.sh

# Install the scrape test's Python packages (pinned in deploy/monitoring/requirements.txt) into the project venv.
setup-monitoring:
    #!/usr/bin/env bash
    set -euo pipefail
    stamp="{{venv}}/.monitoring-requirements.sha"
    want="$(sha256sum deploy/monitoring/requirements.txt | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
      "{{venv}}/bin/pip" install --quiet --disable-pip-version-check -r deploy/monitoring/requirements.txt
      echo "$want" > "$stamp"
    fi

# (The nodes flush and compact early, so a few hundred writes move every engine family.)
# Scrape a fresh cluster's nodes and Envoy with Prometheus' own parsers; check the dashboard's names.
test-metrics: setup-monitoring
    #!/usr/bin/env bash
    set -euo pipefail
    cd storage && cargo build --bins && cd ..
    dir="{{run}}/metrics"
    trap '"{{cluster}}" down --run-dir "$dir"' EXIT
    "{{cluster}}" up --fresh --run-dir "$dir" --envoy "{{envoy}}" \
        --base-port 17301 --gateway-port 18380 --admin-port 19931 -- --compact-log-entries 100 --compact-keep-entries 20
    STRATA_URL=http://127.0.0.1:18380 STRATA_ENVOY_ADMIN=http://127.0.0.1:19931 \
    STRATA_NODES=http://127.0.0.1:17301,http://127.0.0.1:17302,http://127.0.0.1:17303 \
        "{{venv}}/bin/python" -m unittest discover -s deploy/monitoring -p 'test_*.py' -v

# k6 smoke scenarios (REST and gRPC), then the Python (REST, gRPC and memcached), Go and TypeScript examples, against a fresh cluster behind Envoy.
test-smoke: setup-k6 setup-console
    #!/usr/bin/env bash
    set -euo pipefail
    cd storage && cargo build --bins && cd ..
    dir="{{run}}/smoke"
    trap '"{{cluster}}" down --run-dir "$dir"' EXIT
    "{{cluster}}" up --fresh --run-dir "$dir" --envoy "{{envoy}}" \
        --base-port 17101 --gateway-port 18180 --admin-port 19911 \
        --memcache-base-port 17111 --gateway-memcache-port 18181
    STRATA_URL=http://127.0.0.1:18180 "{{k6}}" run --quiet loadtest/smoke.js
    STRATA_ADDR=127.0.0.1:18180 "{{k6}}" run --quiet loadtest/smoke-grpc.js
    # The clients of other languages in examples/, each against the same gateway.
    export STRATA_URL=http://127.0.0.1:18180
    python3 examples/python/strata_example.py
    STRATA_GRPC=127.0.0.1:18180 "{{venv}}/bin/python" examples/python/strata_grpc_example.py
    STRATA_MEMCACHE=127.0.0.1:18181 "{{venv}}/bin/python" examples/python/memcached_example.py
    (cd examples/go && go run .)
    npm run --silent --prefix examples/typescript start

# (Every console/e2e/*.e2e.mjs in turn: membership and node details, elections after kill -9 of the leader
# under a write load (the gateway's failover window), storage after writes and a compaction pressed in the
# Actions view; a full-page screenshot of each view, and a 420 px one, under .run/e2e/screenshots.)
# The console in Debian's Chromium against a real cluster.
test-e2e: console-build
    #!/usr/bin/env bash
    set -euo pipefail
    [ -x /usr/bin/chromium ] || { echo "test-e2e: Chromium is missing; run ./dev setup-system (as root)" >&2; exit 1; }
    cd storage && cargo build --bins && cd ..
    dir="{{run}}/e2e"
    trap '"{{cluster}}" down --run-dir "$dir"' EXIT
    "{{cluster}}" up --fresh --run-dir "$dir" --envoy "{{envoy}}" \
        --base-port 17201 --gateway-port 18280 --admin-port 19921 --console-dir console/dist \
        -- --compact-log-entries 100 --compact-keep-entries 20
    cd console && STRATA_URL=http://127.0.0.1:18280 STRATA_RUN_DIR="$dir" STRATA_CLUSTER_BIN="{{cluster}}" \
        STRATA_TOKEN_FILE="$dir/admin.token" E2E_SCREENSHOT_DIR="$dir/screenshots" npm run e2e

# (Against a cluster that takes no request without a token, as compose and Kubernetes run it:
# Keys: signed out, the view shows the 401; signed in, put, read back through Envoy, delete → 404.
# Actions: with a read token, a removal is refused with 403; signed in with the launcher's admin
# token, remove a member (the Cluster view shows it gone) and add it back as a learner, promote it,
# snapshot every member. Load: the k6 smoke run from the view, both the nodes' and k6's figures
# above zero, k6's checks passing with the starter's token, the run's state pushed over one
# stream, and the run ending by itself. Ranges, last: a split from the Actions view, both ranges
# led in the Cluster view, a key past the split written and read back, a second press splitting nothing.)
# The console's Keys, Actions, Load and range views in Debian's Chromium against a real cluster with its load runner.
test-e2e-ops: console-build setup-k6
    #!/usr/bin/env bash
    set -euo pipefail
    [ -x /usr/bin/chromium ] || { echo "test-e2e-ops: Chromium is missing; run ./dev setup-system (as root)" >&2; exit 1; }
    cd storage && cargo build --bins && cd ..
    dir="{{run}}/e2e-ops"
    trap '"{{cluster}}" down --run-dir "$dir"' EXIT
    "{{cluster}}" up --fresh --run-dir "$dir" --envoy "{{envoy}}" \
        --base-port 17401 --gateway-port 18480 --admin-port 19941 \
        --k6-port 18485 --k6-dashboard-port 18487 --load-port 18486 --k6 "{{k6}}" --console-dir console/dist \
        --anonymous-role none
    "{{cluster}}" auth --dir "$dir/auth" --role read \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])' > "$dir/read.token"
    cd console && STRATA_URL=http://127.0.0.1:18480 STRATA_TOKEN_FILE="$dir/admin.token" \
        STRATA_READ_TOKEN_FILE="$dir/read.token" E2E_SCREENSHOT_DIR="$dir/screenshots" npm run e2e:ops
