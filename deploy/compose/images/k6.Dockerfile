# k6 for docker-compose.yml's "load" profile on a host that cannot pull grafana/k6: the local Debian
# base with the k6 binary `./dev setup-k6` installs (the pinned release). `k6` is the entry point,
# as in grafana/k6. Built by deploy/compose/local-images.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY k6 /usr/bin/k6
USER nobody
WORKDIR /tmp
ENTRYPOINT ["k6"]
