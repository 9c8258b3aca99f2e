"""TLS for the Strata gateway: what gen_envoy.py adds when it is given certificates.

* Clients -> Envoy (``--tls-cert`` / ``--tls-key``): the public listener speaks TLS 1.2 or 1.3,
  offering ALPN ``h2`` (gRPC, and REST over HTTP/2) and ``http/1.1`` (REST, SSE, the console). A
  TLS inspector sorts each connection by its first bytes: one that starts in plaintext gets an
  HTTP 400 saying the port needs TLS, instead of a reset the client cannot explain.
* Envoy -> nodes (``--node-tls-cert`` / ``--node-tls-key`` / ``--node-tls-ca``): the member
  clusters, and so their health checks, connect with TLS, offer ALPN ``h2``, present the gateway's
  certificate (the nodes require a client certificate issued by the cluster's CA) and accept a
  node only if its certificate is issued by that CA. The CA is the trust: any certificate it issued
  is a member's or the gateway's, so a node's certificate is not matched to its address.

Certificates are files Envoy reads at start (``strata tls init`` / ``strata tls cert`` make them).
"""

from __future__ import annotations

TLS_MIN = "TLSv1_2"
DOWNSTREAM_ALPN = ["h2", "http/1.1"]
PLAINTEXT_REFUSAL = ("this port speaks TLS: connect with https:// (the strata CLI: an https:// "
                     "--endpoint and --ca-file)\n")


def _certificate(cert: str, key: str) -> dict:
    return {"certificate_chain": {"filename": cert}, "private_key": {"filename": key}}


def downstream_transport_socket(cert: str, key: str) -> dict:
    """The public listener's TLS: the gateway's certificate, TLS 1.2+, ALPN h2 and http/1.1."""
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "tls_params": {"tls_minimum_protocol_version": TLS_MIN},
                "alpn_protocols": DOWNSTREAM_ALPN,
                "tls_certificates": [_certificate(cert, key)],
            },
        },
    }


def tls_listener(listener: dict, cert: str, key: str) -> dict:
    """Turns the plaintext public ``listener`` into a TLS one, with a second filter chain that
    answers a plaintext connection with 400 and the reason."""
    (chain,) = listener["filter_chains"]
    tls_chain = {
        "filter_chain_match": {"transport_protocol": "tls"},
        **chain,
        "transport_socket": downstream_transport_socket(cert, key),
    }
    refusal = {
        "filter_chain_match": {"transport_protocol": "raw_buffer"},
        "filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                "stat_prefix": "ingress_plaintext",
                "codec_type": "AUTO",
                "route_config": {
                    "name": "plaintext",
                    "virtual_hosts": [{
                        "name": "plaintext",
                        "domains": ["*"],
                        "routes": [{
                            "match": {"prefix": "/"},
                            "direct_response": {"status": 400, "body": {"inline_string": PLAINTEXT_REFUSAL}},
                        }],
                    }],
                },
                "http_filters": [{
                    "name": "envoy.filters.http.router",
                    "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
                }],
            },
        }],
    }
    return {
        **listener,
        "listener_filters": [{
            "name": "envoy.filters.listener.tls_inspector",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector",
            },
        }],
        "filter_chains": [tls_chain, refusal],
    }


def upstream_transport_socket(cert: str, key: str, ca: str) -> dict:
    """The member clusters' TLS to the nodes: the gateway's client certificate, the cluster's CA."""
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
            "common_tls_context": {
                "tls_params": {"tls_minimum_protocol_version": TLS_MIN},
                "alpn_protocols": ["h2"],
                "tls_certificates": [_certificate(cert, key)],
                "validation_context": {"trusted_ca": {"filename": ca}},
            },
        },
    }
