# Prometheus for docker-compose.yml on a host that cannot pull prom/prometheus: the local Debian
# base with the server of Debian's prometheus package (its binary and web assets only, not the
# package's dependencies), started as prom/prometheus starts it: its config at
# /etc/prometheus/prometheus.yml (compose mounts it), the database in /prometheus, port 9090.
# Built by deploy/compose/local-images.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE} AS package
RUN apt-get update && apt-get install -y --no-install-recommends prometheus

FROM ${BASE_IMAGE}
COPY --from=package /usr/bin/prometheus /usr/bin/promtool /usr/bin/
COPY --from=package /usr/share/prometheus/ /usr/share/prometheus/
RUN mkdir -p /etc/prometheus /prometheus && chown nobody:nogroup /prometheus
USER nobody
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
