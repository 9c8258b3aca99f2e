# Jaeger for docker-compose.yml on a host that cannot pull jaegertracing/all-in-one: the local Debian
# base with the Jaeger v2 binary `./dev setup-jaeger` builds (deploy/local/jaeger), serving
# jaeger.yaml: OTLP/gRPC on 4317, the query API on 16686 (this build has no UI), traces kept in
# memory, as the all-in-one image does. Built by deploy/compose/local-images.sh.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
COPY jaeger /usr/local/bin/jaeger
COPY jaeger.yaml /etc/jaeger/config.yaml
USER nobody
EXPOSE 4317 16686
ENTRYPOINT ["/usr/local/bin/jaeger"]
CMD ["--config", "/etc/jaeger/config.yaml"]
