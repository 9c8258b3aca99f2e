"""TLS for the Strata gateway: what gen_envoy.py adds when it is given certificates.

* Clients -> Envoy (``--tls-cert`` / ``--tls-key``): the public listener speaks TLS 1.2 or 1.3,
  offering ALPN ``h2`` (gRPC, and REST over HTTP/2) and ``http/1.1`` (REST, SSE, the console). A
  TLS inspector sorts each connection by its first bytes: one that starts in plaintext gets an
  HTTP 400 saying the port needs TLS, instead of a reset the client cannot explain.
  The certificate reaches the listener by SDS from a file (``--tls-sds``, written beside the
  config): that file names the certificate and key files, and Envoy watches their directory, so
  renaming a new certificate over the old one is served to new connections without a restart
  (below).
* Envoy -> nodes (``--node-tls-cert`` / ``--node-tls-key`` / ``--node-tls-ca``): the member
  clusters, and so their health checks, connect with TLS, offer ALPN ``h2``, present the gateway's
  certificate (the nodes require a client certificate issued by the cluster's CA) and accept a
  node only if its certificate is issued by that CA. The CA is the trust: any certificate it issued
  is a member's or the gateway's, so a node's certificate is not matched to its address.

Certificates are files (``strata tls init`` / ``strata tls cert`` make them).

Reloading the clients' certificate (Envoy's SDS from a file)
------------------------------------------------------------
The listener takes its certificate from the secret ``gateway_certificate``, which Envoy reads from
the SDS file (``sds_resource``: a DiscoveryResponse with one ``Secret`` whose ``tls_certificate``
names the two files). Envoy then watches

* the directories of the certificate and the key, for a file moved into them (``MovedTo``: a
  rename, never a write in place): it reads both files again and, when they changed and make a
  pair, new handshakes get the new certificate. A key that does not match the certificate (the
  key renamed into place before its certificate) is refused (``sds.gateway_certificate.
  key_rotation_failed``, and "Failed to reload certificates" in Envoy's log) and the old pair is
  served on, until the matching certificate arrives. Connections already open keep theirs.
* the SDS file's own directory (``watched_directory`` of its ``path_config_source``), for a file
  moved into it, so that the SDS file itself can be replaced (say by regenerating it, which renames
  a new file into place, or by a Kubernetes ConfigMap update, which swaps a symlink there).

``envoy --mode validate`` needs the SDS file to exist, and reads no further: it does not open the
certificate files.

The member clusters' certificate for the nodes (``--node-tls-*``) is still read at start only.
"""

from __future__ import annotations

import os

TLS_MIN = "TLSv1_2"
DOWNSTREAM_ALPN = ["h2", "http/1.1"]
PLAINTEXT_REFUSAL = ("this port speaks TLS: connect with https:// (the strata CLI: an https:// "
                     "--endpoint and --ca-file)\n")
# The secret the public listener's certificate comes from (its statistics are sds.<name>.*).
GATEWAY_SECRET = "gateway_certificate"
# The SDS file's name beside the generated config, unless --tls-sds names another.
SDS_FILE = "gateway-tls-sds.yaml"


def _certificate(cert: str, key: str) -> dict:
    return {"certificate_chain": {"filename": cert}, "private_key": {"filename": key}}


def sds_resource(cert: str, key: str) -> dict:
    """The SDS file's content: the one secret ``GATEWAY_SECRET``, the certificate ``cert`` and its
    key ``key``, read from their files (and read again when a file is moved into their directory)."""
    return {
        "resources": [{
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
            "name": GATEWAY_SECRET,
            "tls_certificate": _certificate(cert, key),
        }],
    }


def sds_secret_config(sds_path: str) -> dict:
    """Where the listener finds ``GATEWAY_SECRET``: the file ``sds_path``, read again when a file is
    moved into its directory."""
    return {
        "name": GATEWAY_SECRET,
        "sds_config": {
            "path_config_source": {
                "path": sds_path,
                "watched_directory": {"path": os.path.dirname(sds_path) or "."},
            },
            "resource_api_version": "V3",
        },
    }


def downstream_transport_socket(sds_path: str) -> dict:
    """The public listener's TLS: the gateway's certificate (by SDS from ``sds_path``), TLS 1.2+,
    ALPN h2 and http/1.1."""
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": {
                "tls_params": {"tls_minimum_protocol_version": TLS_MIN},
                "alpn_protocols": DOWNSTREAM_ALPN,
                "tls_certificate_sds_secret_configs": [sds_secret_config(sds_path)],
            },
        },
    }


def tls_listener(listener: dict, sds_path: str) -> dict:
    """Turns the plaintext public ``listener`` into a TLS one, its certificate from the SDS file
    ``sds_path``, with a second filter chain that answers a plaintext connection with 400 and the
    reason."""
    (chain,) = listener["filter_chains"]
    tls_chain = {
        "filter_chain_match": {"transport_protocol": "tls"},
        **chain,
        "transport_socket": downstream_transport_socket(sds_path),
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
