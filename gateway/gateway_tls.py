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
  clusters, and so their health checks, and the xds cluster with ``--eds``, connect with TLS, offer
  ALPN ``h2``, present the gateway's certificate (the nodes require a client certificate issued by
  the cluster's CA) and accept a node only if its certificate is issued by that CA. The CA is the
  trust: any certificate it issued is a member's or the gateway's, so a node's certificate is not
  matched to its address. The certificate and the CA reach those clusters by SDS from two more
  files (``--node-tls-sds``, ``--node-tls-ca-sds``, written beside the config), reloaded the same
  way: new connections to the nodes use what was renamed into place.

Certificates are files (``strata tls init`` / ``strata tls cert`` make them).

Reloading certificates and the CA (Envoy's SDS from a file)
-----------------------------------------------------------
Each TLS context takes what it reads from files by name, as a secret, from an SDS file
(``sds_file``: a DiscoveryResponse with one ``Secret``):

* ``gateway_certificate``: ``--tls-cert`` and ``--tls-key``, for the public listener;
* ``gateway_node_certificate``: ``--node-tls-cert`` and ``--node-tls-key``, shown to the nodes;
* ``node_ca``: ``--node-tls-ca``, which a node's certificate must be issued by.

One file per secret: Envoy takes a file-based SDS update only when it holds exactly the one secret
asked for (else "Unexpected SDS secrets length ... Expected sum is 1", ``sds.<secret>.
update_rejected``, and the context never gets its secret), so several secrets cannot share a file. The clusters to the nodes share their two secrets (Envoy keeps
one provider per name and source). Envoy then watches

* the directories of the files a secret names, for a file moved into them (``MovedTo``: a
  rename, never a write in place): it reads them again and, when they changed and a certificate
  and key make a pair, new handshakes use them. A key that does not match the certificate (the
  key renamed into place before its certificate) is refused (``sds.<secret>.key_rotation_failed``,
  and "Failed to reload certificates" in Envoy's log) and the old pair is used on, until the
  matching certificate arrives. Connections already open keep theirs: to the nodes too, where
  Envoy holds its connections open, so a node sees the new certificate when Envoy next connects to
  it (the node or the connection restarted).
* the SDS file's own directory (``watched_directory`` of its ``path_config_source``), for a file
  moved into it, so that the SDS file itself can be replaced (say by regenerating it, which renames
  a new file into place, or by a Kubernetes ConfigMap update, which swaps a symlink there).

``envoy --mode validate`` needs the SDS files to exist, and reads no further: it does not open the
certificate files. A file with more than one secret it only warns about ("config rejected"), and
passes the config.
"""

from __future__ import annotations

import argparse
import json
import os

from yaml_text import to_yaml

TLS_MIN = "TLSv1_2"
DOWNSTREAM_ALPN = ["h2", "http/1.1"]
PLAINTEXT_REFUSAL = ("this port speaks TLS: connect with https:// (the strata CLI: an https:// "
                     "--endpoint and --ca-file)\n")
# The secrets (their statistics are sds.<name>.*): the public listener's certificate, the
# certificate the clusters to the nodes present, and the CA they check a node's certificate with.
GATEWAY_SECRET = "gateway_certificate"
NODE_CERT_SECRET = "gateway_node_certificate"
NODE_CA_SECRET = "node_ca"
# The SDS files' names beside the generated config, unless --tls-sds, --node-tls-sds and
# --node-tls-ca-sds name others.
SDS_FILE = "gateway-tls-sds.yaml"
NODE_SDS_FILE = "gateway-node-tls-sds.yaml"
NODE_CA_SDS_FILE = "gateway-node-ca-sds.yaml"


def _certificate(cert: str, key: str) -> dict:
    return {"certificate_chain": {"filename": cert}, "private_key": {"filename": key}}


def sds_file(name: str, secret: dict) -> dict:
    """An SDS file's content: the one secret ``name``, ``secret`` its ``tls_certificate`` or
    ``validation_context`` (files named there are read again when a file is moved into their
    directory)."""
    return {
        "resources": [{
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
            "name": name,
            **secret,
        }],
    }


def certificate_secret(name: str, cert: str, key: str) -> dict:
    """The SDS file of the secret ``name``: the certificate ``cert`` and its key ``key``."""
    return sds_file(name, {"tls_certificate": _certificate(cert, key)})


def ca_secret(name: str, ca: str) -> dict:
    """The SDS file of the secret ``name``: the CA certificate ``ca`` a peer's certificate must be
    issued by."""
    return sds_file(name, {"validation_context": {"trusted_ca": {"filename": ca}}})


def sds_secret_config(name: str, sds_path: str) -> dict:
    """Where a TLS context finds the secret ``name``: the file ``sds_path``, read again when a file
    is moved into its directory."""
    return {
        "name": name,
        "sds_config": {
            "path_config_source": {
                "path": sds_path,
                "watched_directory": {"path": os.path.dirname(sds_path) or "."},
            },
            "resource_api_version": "V3",
        },
    }


def downstream_transport_socket(sds_path: str, alpn: list[str] | None = None) -> dict:
    """A public listener's TLS: the gateway's certificate (by SDS from ``sds_path``), TLS 1.2+,
    ALPN ``alpn`` (h2 and http/1.1 by default; none for the TCP protocols, whose clients offer
    none)."""
    context = {
        "tls_params": {"tls_minimum_protocol_version": TLS_MIN},
        "tls_certificate_sds_secret_configs": [sds_secret_config(GATEWAY_SECRET, sds_path)],
    }
    alpn = DOWNSTREAM_ALPN if alpn is None else alpn
    if alpn:
        context["alpn_protocols"] = alpn
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
            "common_tls_context": context,
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


def upstream_transport_socket(cert_sds: str, ca_sds: str) -> dict:
    """The TLS of the clusters to the nodes: the gateway's client certificate (by SDS from
    ``cert_sds``), the cluster's CA (by SDS from ``ca_sds``)."""
    return {
        "name": "envoy.transport_sockets.tls",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
            "common_tls_context": {
                "tls_params": {"tls_minimum_protocol_version": TLS_MIN},
                "alpn_protocols": ["h2"],
                "tls_certificate_sds_secret_configs": [sds_secret_config(NODE_CERT_SECRET, cert_sds)],
                "validation_context_sds_secret_config": sds_secret_config(NODE_CA_SECRET, ca_sds),
            },
        },
    }


def render_sds(args: argparse.Namespace) -> dict[str, str]:
    """The SDS files, by path: with --tls-cert the one naming the clients' certificate (at
    ``args.tls_sds``), with --node-tls-cert the ones naming the certificate shown to the nodes and
    the CA their certificates are checked with. Each is JSON when its name ends in .json, else YAML,
    as Envoy reads it."""
    files = []
    if args.tls_cert:
        files.append((args.tls_sds, certificate_secret(GATEWAY_SECRET, args.tls_cert, args.tls_key),
                      "--tls-cert: the gateway's certificate for clients"))
    if args.node_tls_cert:
        files.append((args.node_tls_sds, certificate_secret(NODE_CERT_SECRET, args.node_tls_cert,
                                                            args.node_tls_key),
                      "--node-tls-cert: the gateway's certificate for the nodes"))
        files.append((args.node_tls_ca_sds, ca_secret(NODE_CA_SECRET, args.node_tls_ca),
                      "--node-tls-ca: the CA the nodes' certificates are checked with"))
    rendered = {}
    for path, resource, what in files:
        if path.endswith(".json"):
            rendered[path] = json.dumps(resource, indent=2) + "\n"
        else:
            rendered[path] = (f"# GENERATED by gateway/gen_envoy.py {what}, by SDS "
                              "(gateway/gateway_tls.py).\n" + to_yaml(resource) + "\n")
    return rendered


def write_by_rename(path: str, text: str) -> None:
    """Writes ``path`` whole: into a new file in its directory, renamed over it. Envoy reloads the
    SDS file when a file is moved into its directory, and must never read half of one."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
