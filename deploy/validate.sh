#!/usr/bin/env bash
# Static validation of the deployment files (no Docker engine, no Kubernetes API server needed):
#   1. docker-compose.yml        docker-compose config -q (also with the "load" profile), and
#                                deploy/test_compose.py on the resolved file (the nodes export
#                                their traces where Envoy does)
#   2. deploy/k8s/*.yaml         kubernetes-validate --strict (schemas bundled, offline)
#   3. kustomization             kustomize build deploy/k8s (the pinned version), kubernetes-validate
#                                --strict of what it renders, and deploy/test_k8s.py on it (every
#                                file is in it, the NetworkPolicy admits the nodes and the gateway
#                                alone, both workloads spread their replicas over machines)
#   4. Envoy configs             the generator's tests (the committed ConfigMap is current, the
#                                compose image generates the config its services match), then
#                                envoy --mode validate (only when envoy is found) of the demo and
#                                compose configs as generated and of the ConfigMap's payload
# Tools come from env vars or PATH:
#   DOCKER_COMPOSE (default: docker-compose)   KUBERNETES_VALIDATE (default: kubernetes-validate)
#   K8S_VERSION (default: 1.37.0)              KUSTOMIZE (default: kustomize, on PATH or in the tools folder)
#   ENVOY (default: envoy)                     KUSTOMIZE_VERSION (default: the Justfile's kustomize_version;
#                                              empty: any)
# Exits non-zero when any check fails (all checks run, failures are listed at the end).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DOCKER_COMPOSE="${DOCKER_COMPOSE:-docker-compose}"
KUBERNETES_VALIDATE="${KUBERNETES_VALIDATE:-kubernetes-validate}"
K8S_VERSION="${K8S_VERSION:-1.37.0}"
# kustomize: as given, else on PATH, else where ./dev setup-kustomize puts it (the tools folder of
# ./dev, or CI's cache); the version it must report is the Justfile's pin unless given.
if [ -z "${KUSTOMIZE:-}" ]; then
  KUSTOMIZE=kustomize
  if ! command -v kustomize >/dev/null 2>&1; then
    for t in "${STRATA_TOOLS_DIR:-$ROOT/.tools}" "$HOME/.cache/strata/tools"; do
      [ -x "$t/bin/kustomize" ] && { KUSTOMIZE="$t/bin/kustomize"; break; }
    done
  fi
fi
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION-$(sed -n 's/^kustomize_version := "\(.*\)"$/\1/p' Justfile)}"
ENVOY="${ENVOY:-envoy}"

failures=()
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
step() { printf '== %s\n' "$*"; }
run() {  # run NAME CMD...: run a check, remember it when it fails
  local name="$1"; shift
  if "$@"; then printf 'ok   %s\n' "$name"; else printf 'FAIL %s\n' "$name"; failures+=("$name"); fi
}
need() {  # need TOOL: the tool must exist
  if ! command -v "$1" >/dev/null 2>&1; then
    printf 'FAIL %s not found (set the env var or put it on PATH)\n' "$1"; failures+=("missing $1"); return 1
  fi
}

step "docker-compose"
if need "$DOCKER_COMPOSE"; then
  run "docker-compose config" "$DOCKER_COMPOSE" -f docker-compose.yml config -q
  run "docker-compose config (profile load)" "$DOCKER_COMPOSE" -f docker-compose.yml --profile load config -q
  run "compose wiring (deploy/test_compose.py)" \
    env DOCKER_COMPOSE="$DOCKER_COMPOSE" PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -q deploy/test_compose.py
fi

step "kubernetes manifests (k8s $K8S_VERSION, strict)"
manifests=()
for f in deploy/k8s/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] && continue
  manifests+=("$f")
done
if need "$KUBERNETES_VALIDATE"; then
  run "kubernetes-validate ${#manifests[@]} files" "$KUBERNETES_VALIDATE" --strict -k "$K8S_VERSION" "${manifests[@]}"
fi

step "kustomization (kustomize ${KUSTOMIZE_VERSION:-of any version})"
if need "$KUSTOMIZE"; then
  kustomize_reports="$("$KUSTOMIZE" version 2>&1)"
  echo "$KUSTOMIZE: $kustomize_reports"
  if [ -n "$KUSTOMIZE_VERSION" ]; then
    run "kustomize $kustomize_reports is the pinned $KUSTOMIZE_VERSION" test "$kustomize_reports" = "$KUSTOMIZE_VERSION"
  fi
  if "$KUSTOMIZE" build deploy/k8s > "$tmp/kustomized.yaml"; then
    printf 'ok   kustomize build deploy/k8s (%s objects)\n' "$(grep -c '^kind:' "$tmp/kustomized.yaml")"
    if command -v "$KUBERNETES_VALIDATE" >/dev/null 2>&1; then
      run "kubernetes-validate the kustomize build" "$KUBERNETES_VALIDATE" --strict -k "$K8S_VERSION" "$tmp/kustomized.yaml"
    fi
    run "what kustomize builds (deploy/test_k8s.py)" \
      env KUSTOMIZE="$KUSTOMIZE" PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -q deploy/test_k8s.py
  else
    printf 'FAIL kustomize build deploy/k8s\n'; failures+=("kustomize build deploy/k8s")
  fi
fi

step "Envoy configs"
run "generator tests (gateway/test_gen_envoy.py, gateway/test_gateway_tls.py)" \
  env PYTHONDONTWRITEBYTECODE=1 python3 -m unittest -q gateway/test_gen_envoy.py gateway/test_gateway_tls.py
if command -v "$ENVOY" >/dev/null 2>&1; then
  # The demo's config as strata-cluster generates it at start, the compose one as
  # deploy/Dockerfile.envoy generates it, and the committed ConfigMap's payload.
  python3 gateway/gen_envoy.py --eds --out "$tmp/demo.yaml"
  compose_args="$(sed -n 's|^RUN python3 /gateway/gen_envoy.py \(.*\) --out .*$|\1|p' deploy/Dockerfile.envoy)"
  [ -n "$compose_args" ] || { echo "FAIL deploy/Dockerfile.envoy runs no 'python3 /gateway/gen_envoy.py ARGS --out FILE'"; failures+=("compose generator arguments"); }
  # shellcheck disable=SC2086 # the Dockerfile's arguments, split as the shell in the image splits them
  python3 gateway/gen_envoy.py $compose_args --out "$tmp/compose.yaml"
  sed -n '/^  envoy.yaml: |$/,$p' deploy/k8s/envoy-configmap.yaml | tail -n +2 | sed 's/^    //' > "$tmp/k8s-envoy.yaml"
  # Compose and Kubernetes mount the cluster's public keys at run time, and validation reads them:
  # a made-up key set stands in for them.
  printf '%s\n' '{"keys":[{"kty":"OKP","crv":"Ed25519","alg":"EdDSA","use":"sig","kid":"validate","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}' > "$tmp/jwks.json"
  sed -i -e "s|/run/secrets/strata-jwks|$tmp/jwks.json|g" -e "s|/etc/strata/auth/jwks.json|$tmp/jwks.json|g" \
      "$tmp/compose.yaml" "$tmp/k8s-envoy.yaml"
  run "envoy validate the demo config" bash -c "'$ENVOY' --mode validate -c '$tmp/demo.yaml' -l error >/dev/null"
  run "envoy validate the compose config ($compose_args)" bash -c "'$ENVOY' --mode validate -c '$tmp/compose.yaml' -l error >/dev/null"
  run "envoy validate the k8s ConfigMap payload" bash -c "'$ENVOY' --mode validate -c '$tmp/k8s-envoy.yaml' -l error >/dev/null"
else
  echo "skip envoy --mode validate ($ENVOY not found)"
fi

if [ "${#failures[@]}" -gt 0 ]; then
  printf '\n%d check(s) failed:\n' "${#failures[@]}"; printf '  - %s\n' "${failures[@]}"
  exit 1
fi
printf '\nall deployment checks passed\n'
