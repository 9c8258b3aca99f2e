# Strata's one entry point. `./dev <recipe>` installs `just` and runs these.
set shell := ["bash", "-euo", "pipefail", "-c"]

root := justfile_directory()
tools := env("STRATA_TOOLS_DIR", root / ".tools")
target := env("CARGO_TARGET_DIR", root / "storage/target")
venv := tools / "venv"
envoy := venv / "bin/envoy"
k6 := tools / "bin/k6"
k6_version := "v1.8.1"
run := root / ".run"
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

# Install everything the project needs into project-local folders.
setup: setup-k6 setup-console

setup-k6:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x "{{k6}}" ] || ! "{{k6}}" version 2>/dev/null | grep -q "{{k6_version}}"; then
      echo "installing k6 {{k6_version}} into {{tools}}/bin"
      mkdir -p "{{tools}}/bin"
      GOBIN="{{tools}}/bin" GOFLAGS=-mod=mod go install "go.k6.io/k6@{{k6_version}}"
    fi

setup-console:
    #!/usr/bin/env bash
    set -euo pipefail
    cd console
    if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      npm ci --no-audit --no-fund
    fi

# Build the node and CLI (optimized).
build:
    cd storage && cargo build --release --bins

# Build the console bundle.
console-build: setup-console
    cd console && npm run build

# Start 3 nodes + Envoy + console in the background; returns once healthy.
up: build console-build
    python3 deploy/local/cluster.py up --run-dir "{{run}}/demo" --bin-dir "{{target}}/release" \
        --envoy "{{envoy}}" --console-dir console/dist

# Stop everything `up` started.
down:
    python3 deploy/local/cluster.py down --run-dir "{{run}}/demo"

# Show the demo cluster as the CLI sees it.
status:
    "{{target}}/release/strata" status

# Format all code.
fmt:
    cd storage && cargo fmt --all
    cd console && npx prettier --write src 2>/dev/null || true

# Lints: rustfmt check, clippy, TypeScript and eslint.
lint: setup-console
    cd storage && cargo fmt --all -- --check
    cd storage && cargo clippy --workspace --all-targets -- -D warnings
    cd console && npm run typecheck && npm run lint

# The gate: lints, then every test.
check: lint test-all

# The whole test suite (what CI runs).
test: setup lint test-all

test-all: test-rust test-engine-long fuzz-smoke test-sim test-console test-gateway test-deploy test-smoke test-e2e test-bench-smoke test-k6-inspect test-reliability

# Rust unit and multi-node integration tests (real processes behind real Envoy).
test-rust:
    cd storage && cargo build --bins
    cd storage && STRATA_ENVOY="{{envoy}}" STRATA_NODE_BIN="{{target}}/debug/strata-node" cargo test --workspace --exclude strata-fuzz

# Console unit tests.
test-console: setup-console
    cd console && mkdir -p node_modules/.cache && npm run check:api && npm test

# Gateway config generator tests.
test-gateway:
    ENVOY="{{envoy}}" python3 -m unittest discover -s gateway -p 'test_*.py' -v

# Static validation of docker-compose.yml and the Kubernetes manifests.
test-deploy:
    #!/usr/bin/env bash
    set -euo pipefail
    if ! command -v docker-compose >/dev/null; then
      if [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq --no-install-recommends docker-compose) >/dev/null
      else
        echo "docker-compose is missing; install it (apt-get install docker-compose)" >&2; exit 1
      fi
    fi
    ENVOY="{{envoy}}" bash deploy/validate.sh

# k6 smoke scenarios (REST and gRPC) against a fresh cluster behind Envoy.
test-smoke: setup-k6
    #!/usr/bin/env bash
    set -euo pipefail
    cd storage && cargo build --bins && cd ..
    dir="{{run}}/smoke"
    trap 'python3 {{root}}/deploy/local/cluster.py down --run-dir "$dir"' EXIT
    python3 deploy/local/cluster.py up --fresh --run-dir "$dir" --bin-dir "{{target}}/debug" --envoy "{{envoy}}" \
        --base-port 17101 --gateway-port 18180 --admin-port 19911
    STRATA_URL=http://127.0.0.1:18180 "{{k6}}" run --quiet loadtest/smoke.js
    STRATA_ADDR=127.0.0.1:18180 "{{k6}}" run --quiet loadtest/smoke-grpc.js

# The console in Debian's Chromium against a real cluster: live membership,
# and the leader highlight moving after kill -9 of the leader.
test-e2e: console-build
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x /usr/bin/chromium ]; then
      if [ "$(id -u)" = 0 ]; then
        (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium) >/dev/null
      else
        echo "Chromium is missing; install it (apt-get install chromium)" >&2; exit 1
      fi
    fi
    cd storage && cargo build --bins && cd ..
    dir="{{run}}/e2e"
    trap 'python3 {{root}}/deploy/local/cluster.py down --run-dir "$dir"' EXIT
    python3 deploy/local/cluster.py up --fresh --run-dir "$dir" --bin-dir "{{target}}/debug" --envoy "{{envoy}}" \
        --base-port 17201 --gateway-port 18280 --admin-port 19921 --console-port 15273 --console-dir console/dist
    cd console && STRATA_URL=http://127.0.0.1:18280 STRATA_RUN_DIR="$dir" E2E_SCREENSHOT_DIR="$dir/screenshots" npm run e2e
