# Stand-in for the public build images deploy/Dockerfile.node and deploy/Dockerfile.envoy start from
# (rust:1.95.0-slim-bookworm, node:20-bookworm-slim, python:3.12-slim-bookworm) on a host that
# cannot pull them: the local Debian base with what those images carry for these builds: gcc and
# libc6-dev for the linker and C code of crates, python3 for the gateway's config generator, and
# the host's own Rust toolchain and Node, and the certificate authorities the host trusts besides
# Debian's (those of /usr/local/share/ca-certificates: a host whose traffic to crates.io and npm
# passes a TLS-inspecting proxy needs them). Built by deploy/compose/local-images.sh, from a
# context it assembles (rust/, node/, ca/).
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null
COPY rust/ /usr/local/rust/
COPY node/node /usr/local/bin/node
COPY node/npm/ /usr/local/lib/node_modules/npm/
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
# As in the rust image: cargo's home (registry, git checkouts) under /usr/local/cargo. Node keeps
# its own list of authorities unless told of the system's.
ENV CARGO_HOME=/usr/local/cargo \
    NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
