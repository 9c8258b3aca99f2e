"""Tests for the gateway's TLS (gateway/gateway_tls.py through gateway/gen_envoy.py): TLS toward
clients and toward the nodes, the certificates by SDS from files, and Envoy taking up replaced files.

    ENVOY=/path/to/envoy python3 -m unittest discover -s gateway -p 'test_*.py'   # also runs Envoy
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_envoy  # noqa: E402
from test_gen_envoy import EnvoyConfigCheck, build, cluster, free_ports, make_certs, serial  # noqa: E402


def quiet_parse(argv: list[str]):
    with open(os.devnull, "w") as devnull:
        stderr, sys.stderr = sys.stderr, devnull
        try:
            return gen_envoy.parse_args(argv)
        finally:
            sys.stderr = stderr


class Tls(unittest.TestCase):
    def test_clients_get_tls_and_a_plaintext_connection_gets_the_reason(self):
        # Proves: with a certificate the public listener sorts connections by their first bytes;
        # TLS ones reach the API with the certificate, TLS 1.2+ and ALPN h2 and http/1.1; plaintext
        # ones get a 400 naming the fix, and reach no node.
        cfg = build("--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem", "--tls-sds", "/g/sds.yaml")
        (listener,) = cfg["static_resources"]["listeners"]
        self.assertEqual([f["name"] for f in listener["listener_filters"]],
                         ["envoy.filters.listener.tls_inspector"])
        tls_chain, plain_chain = listener["filter_chains"]
        self.assertEqual(tls_chain["filter_chain_match"], {"transport_protocol": "tls"})
        self.assertEqual(tls_chain["filters"][0]["typed_config"]["stat_prefix"], "ingress")
        ctx = tls_chain["transport_socket"]["typed_config"]["common_tls_context"]
        self.assertEqual(ctx["alpn_protocols"], ["h2", "http/1.1"])
        self.assertEqual(ctx["tls_params"], {"tls_minimum_protocol_version": "TLSv1_2"})
        # The certificate comes by SDS from the file, not from the certificate's own files.
        self.assertNotIn("tls_certificates", ctx)
        self.assertEqual(ctx["tls_certificate_sds_secret_configs"], [{
            "name": "gateway_certificate",
            "sds_config": {
                "path_config_source": {"path": "/g/sds.yaml", "watched_directory": {"path": "/g"}},
                "resource_api_version": "V3",
            },
        }])
        self.assertEqual(plain_chain["filter_chain_match"], {"transport_protocol": "raw_buffer"})
        self.assertNotIn("transport_socket", plain_chain)
        (route,) = plain_chain["filters"][0]["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
        self.assertEqual(route["direct_response"]["status"], 400)
        self.assertIn("https://", route["direct_response"]["body"]["inline_string"])

    def test_without_a_certificate_the_listener_stays_plaintext(self):
        (listener,) = build()["static_resources"]["listeners"]
        self.assertNotIn("listener_filters", listener)
        (chain,) = listener["filter_chains"]
        self.assertNotIn("transport_socket", chain)
        for c in build()["static_resources"]["clusters"]:
            self.assertNotIn("transport_socket", c)

    def test_member_clusters_and_their_health_checks_use_mutual_tls_when_given_a_client_cert(self):
        # Proves: both member clusters (whose health checks use the cluster's transport socket)
        # present the gateway's certificate and trust the cluster's CA, both by SDS from their own
        # files (each watched in its directory), not from the certificate's or the CA's files, and
        # offer h2; no other cluster changes.
        node_tls = ["--node-tls-cert", "/c/gw.pem", "--node-tls-key", "/c/gw-key.pem", "--node-tls-ca", "/c/ca.pem",
                    "--node-tls-sds", "/g/node-cert.yaml", "--node-tls-ca-sds", "/h/node-ca.yaml"]
        cfg = build(*node_tls)
        for name in ("nodes_leader", "nodes_any"):
            c = cluster(cfg, name)
            tls = c["transport_socket"]["typed_config"]
            self.assertTrue(tls["@type"].endswith("UpstreamTlsContext"))
            ctx = tls["common_tls_context"]
            self.assertEqual(ctx["alpn_protocols"], ["h2"])
            self.assertNotIn("tls_certificates", ctx)
            self.assertNotIn("validation_context", ctx)
            self.assertEqual(ctx["tls_certificate_sds_secret_configs"], [{
                "name": "gateway_node_certificate",
                "sds_config": {
                    "path_config_source": {"path": "/g/node-cert.yaml", "watched_directory": {"path": "/g"}},
                    "resource_api_version": "V3",
                },
            }])
            self.assertEqual(ctx["validation_context_sds_secret_config"], {
                "name": "node_ca",
                "sds_config": {
                    "path_config_source": {"path": "/h/node-ca.yaml", "watched_directory": {"path": "/h"}},
                    "resource_api_version": "V3",
                },
            })
            self.assertNotIn("transport_socket", c["health_checks"][0])
        for c in cfg["static_resources"]["clusters"]:
            if c["name"] not in ("nodes_leader", "nodes_any"):
                self.assertNotIn("transport_socket", c, c["name"])
        # With endpoint discovery, the seeds' cluster speaks to the same nodes: the same mutual TLS.
        eds = build("--eds", *node_tls)
        for name in ("nodes_leader", "nodes_any", "xds"):
            self.assertEqual(cluster(eds, name)["transport_socket"], cluster(cfg, "nodes_any")["transport_socket"],
                             name)

    def test_half_given_tls_flags_are_refused(self):
        for argv in (["--tls-cert", "a"], ["--tls-key", "a"],
                     ["--node-tls-cert", "a", "--node-tls-key", "b"], ["--node-tls-ca", "c"]):
            with self.subTest(argv=argv), self.assertRaises(SystemExit):
                quiet_parse(argv)

    def test_the_sds_file_is_written_beside_the_config_and_names_the_certificate(self):
        # Proves: with --tls-cert and an --out file, the generator writes the SDS file beside it
        # (whole, by a rename: no temporary file is left), and the listener reads its certificate
        # from there, watching that directory; the file holds the one secret the listener asks for,
        # the certificate and key named by path (so Envoy watches their directory too).
        d = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        out = os.path.join(d, "envoy.json")
        gen_envoy.main(["--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem", "--out", out])
        self.assertEqual(sorted(os.listdir(d)), ["envoy.json", "gateway-tls-sds.yaml"])
        with open(out, encoding="utf-8") as f:
            config = json.load(f)
        ctx = config["static_resources"]["listeners"][0]["filter_chains"][0]["transport_socket"][
            "typed_config"]["common_tls_context"]
        (secret,) = ctx["tls_certificate_sds_secret_configs"]
        self.assertEqual(secret["sds_config"]["path_config_source"],
                         {"path": os.path.join(d, "gateway-tls-sds.yaml"), "watched_directory": {"path": d}})
        with open(os.path.join(d, "gateway-tls-sds.yaml"), encoding="utf-8") as f:
            self.assertEqual({os.path.join(d, "gateway-tls-sds.yaml"): f.read()},
                             gen_envoy.render_sds(gen_envoy.parse_args(
                                 ["--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem", "--out", out])))
        # Named .json, it is JSON, and its content is the secret.
        sds = os.path.join(d, "named.json")
        gen_envoy.main(["--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem", "--tls-sds", sds, "--out", out])
        with open(sds, encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"resources": [{
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
                "name": secret["name"],
                "tls_certificate": {"certificate_chain": {"filename": "/c/gw.pem"},
                                    "private_key": {"filename": "/c/gw-key.pem"}},
            }]})
        self.assertEqual(sorted(os.listdir(d)), ["envoy.json", "gateway-tls-sds.yaml", "named.json"])
        # Without a certificate, no SDS file.
        plain = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", plain])
        gen_envoy.main(["--out", os.path.join(plain, "envoy.yaml")])
        self.assertEqual(os.listdir(plain), ["envoy.yaml"])

    def test_the_node_sds_files_are_written_beside_the_config_one_secret_each(self):
        # Proves: with --node-tls-* and an --out file, the generator writes two more SDS files
        # beside it, one secret each (Envoy takes no more from one file): the certificate shown to
        # the nodes, named by path with its key, and the CA their certificates are checked with;
        # the clusters to the nodes read them from there. With --tls-cert too, three files, the
        # same certificate files named in two of them.
        d = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        out = os.path.join(d, "envoy.yaml")
        node_tls = ["--node-tls-cert", "/c/gw.pem", "--node-tls-key", "/c/gw-key.pem", "--node-tls-ca", "/ca/ca.pem"]
        gen_envoy.main(node_tls + ["--out", out])
        self.assertEqual(sorted(os.listdir(d)), ["envoy.yaml", "gateway-node-ca-sds.yaml", "gateway-node-tls-sds.yaml"])
        ctx = cluster(build(*node_tls, "--out", out), "nodes_any")["transport_socket"]["typed_config"][
            "common_tls_context"]
        self.assertEqual(ctx["tls_certificate_sds_secret_configs"][0]["sds_config"]["path_config_source"],
                         {"path": os.path.join(d, "gateway-node-tls-sds.yaml"), "watched_directory": {"path": d}})
        self.assertEqual(ctx["validation_context_sds_secret_config"]["sds_config"]["path_config_source"],
                         {"path": os.path.join(d, "gateway-node-ca-sds.yaml"), "watched_directory": {"path": d}})
        # Named .json, they are JSON, and each holds its one secret.
        cert_sds, ca_sds = os.path.join(d, "cert.json"), os.path.join(d, "ca.json")
        gen_envoy.main(["--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem", *node_tls,
                        "--node-tls-sds", cert_sds, "--node-tls-ca-sds", ca_sds, "--out", out])
        secret = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
        with open(cert_sds, encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"resources": [{
                "@type": secret,
                "name": "gateway_node_certificate",
                "tls_certificate": {"certificate_chain": {"filename": "/c/gw.pem"},
                                    "private_key": {"filename": "/c/gw-key.pem"}},
            }]})
        with open(ca_sds, encoding="utf-8") as f:
            self.assertEqual(json.load(f), {"resources": [{
                "@type": secret,
                "name": "node_ca",
                "validation_context": {"trusted_ca": {"filename": "/ca/ca.pem"}},
            }]})
        self.assertEqual(sorted(os.listdir(d)), ["ca.json", "cert.json", "envoy.yaml", "gateway-node-ca-sds.yaml",
                                                 "gateway-node-tls-sds.yaml", "gateway-tls-sds.yaml"])

    def test_the_sds_file_needs_a_place_when_the_config_has_no_file(self):
        # Proves: to stdout or into a ConfigMap there is no "beside", so --tls-sds, --node-tls-sds
        # and --node-tls-ca-sds must be given; they mean nothing without their certificate; no two
        # of them may be one file (or, in a ConfigMap, one key), nor the config.
        cert = ["--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem"]
        node = ["--node-tls-cert", "/c/gw.pem", "--node-tls-key", "/c/gw-key.pem", "--node-tls-ca", "/c/ca.pem"]
        node_sds = ["--node-tls-sds", "/g/node.yaml", "--node-tls-ca-sds", "/g/ca.yaml"]
        cm = ["--k8s", "--configmap", "strata/strata-envoy", "--out", "cm.yaml"]
        for argv in (cert, cert + cm, ["--tls-sds", "/g/sds.yaml"],
                     node, node + cm, node + ["--node-tls-sds", "/g/node.yaml"],
                     node + ["--node-tls-ca-sds", "/g/ca.yaml"], node_sds,
                     ["--node-tls-sds", "/g/node.yaml"], ["--node-tls-ca-sds", "/g/ca.yaml"],
                     cert + ["--tls-sds", "/g/node.yaml"] + node + node_sds,
                     node + ["--node-tls-sds", "/g/same.yaml", "--node-tls-ca-sds", "/g/same.yaml"],
                     node + ["--node-tls-sds", "/g/envoy.yaml", "--out", "/g/envoy.yaml"],
                     node + cm + ["--node-tls-sds", "/a/sds.yaml", "--node-tls-ca-sds", "/b/sds.yaml"],
                     node + cm + ["--node-tls-sds", "/a/envoy.yaml", "--node-tls-ca-sds", "/b/ca.yaml"]):
            with self.subTest(argv=argv), self.assertRaises(SystemExit):
                quiet_parse(argv)
        self.assertEqual(quiet_parse(cert + ["--tls-sds", "/g/sds.yaml"]).tls_sds, "/g/sds.yaml")
        given = quiet_parse(cert + ["--tls-sds", "/g/sds.yaml"] + node + node_sds)
        self.assertEqual((given.node_tls_sds, given.node_tls_ca_sds), ("/g/node.yaml", "/g/ca.yaml"))

    def test_a_configmap_carries_the_sds_file_beside_the_config(self):
        # Proves: with --configmap the SDS file is a second key of the ConfigMap, so that it is
        # mounted beside envoy.yaml, and the config reads it where --tls-sds says it is mounted.
        text, _ = gen_envoy.render(["--k8s", "--configmap", "strata/strata-envoy", "--tls-cert",
                                    "/etc/strata/tls/gateway.pem", "--tls-key", "/etc/strata/tls/gateway-key.pem",
                                    "--tls-sds", "/etc/envoy/gateway-tls-sds.yaml"])
        self.assertEqual(re.findall(r"^  ([a-z.-]+): \|$", text, re.MULTILINE),
                         ["envoy.yaml", "gateway-tls-sds.yaml"])
        envoy = text[text.index("  envoy.yaml: |"):text.index("  gateway-tls-sds.yaml: |")]
        self.assertIn('path: "/etc/envoy/gateway-tls-sds.yaml"', envoy)
        self.assertIn('path: "/etc/envoy"', envoy)
        sds = text[text.index("  gateway-tls-sds.yaml: |"):]
        self.assertIn('filename: "/etc/strata/tls/gateway.pem"', sds)
        self.assertIn('filename: "/etc/strata/tls/gateway-key.pem"', sds)
        # With --node-tls-*, the node side's two SDS files are two more keys.
        text, _ = gen_envoy.render(["--k8s", "--configmap", "strata/strata-envoy", "--tls-cert",
                                    "/etc/strata/tls/gateway.pem", "--tls-key", "/etc/strata/tls/gateway-key.pem",
                                    "--tls-sds", "/etc/envoy/gateway-tls-sds.yaml",
                                    "--node-tls-cert", "/etc/strata/tls/gateway.pem",
                                    "--node-tls-key", "/etc/strata/tls/gateway-key.pem",
                                    "--node-tls-ca", "/etc/strata/tls/ca.pem",
                                    "--node-tls-sds", "/etc/envoy/gateway-node-tls-sds.yaml",
                                    "--node-tls-ca-sds", "/etc/envoy/gateway-node-ca-sds.yaml"])
        self.assertEqual(re.findall(r"^  ([a-z.-]+): \|$", text, re.MULTILINE),
                         ["envoy.yaml", "gateway-tls-sds.yaml", "gateway-node-tls-sds.yaml",
                          "gateway-node-ca-sds.yaml"])
        envoy = text[text.index("  envoy.yaml: |"):text.index("  gateway-tls-sds.yaml: |")]
        self.assertIn('path: "/etc/envoy/gateway-node-tls-sds.yaml"', envoy)
        self.assertIn('path: "/etc/envoy/gateway-node-ca-sds.yaml"', envoy)
        self.assertNotIn("/etc/strata/tls/", envoy)
        sds = text[text.index("  gateway-node-ca-sds.yaml: |"):]
        self.assertIn('filename: "/etc/strata/tls/ca.pem"', sds)


@unittest.skipUnless(os.environ.get("ENVOY"), "set ENVOY=/path/to/envoy to run envoy --mode validate")
class EnvoyValidatesTls(EnvoyConfigCheck):
    def test_a_tls_config_validates_with_its_sds_file_and_the_file_holds_a_secret_envoy_reads(self):
        # Proves, against the pinned Envoy: the config with a certificate for clients validates
        # with the SDS file the generator wrote beside it, and not without it (validation opens
        # the SDS file; it reads nothing further, not even the certificate). Its one resource is a
        # Secret Envoy parses: the same secret given as a static one validates, and a misspelt
        # field in it would not.
        certs = make_certs(self)
        path = self.generate(["--tls-cert", certs["gw"], "--tls-key", certs["gw-key"]])
        sds = os.path.join(os.path.dirname(path), "gateway-tls-sds.yaml")
        self.validate_file(path)
        os.rename(sds, sds + ".away")
        out = self.envoy_validate(path)
        self.assertNotEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("gateway-tls-sds.yaml", out.stdout + out.stderr)
        os.rename(sds + ".away", sds)

        # The same, its SDS file in JSON: the secret in it, given to Envoy as a static secret.
        d = os.path.dirname(path)
        sds_json, config_json = os.path.join(d, "sds.json"), os.path.join(d, "envoy.json")
        gen_envoy.main(["--tls-cert", certs["gw"], "--tls-key", certs["gw-key"], "--tls-sds", sds_json,
                        "--out", config_json])
        self.validate_file(config_json)
        with open(sds_json, encoding="utf-8") as f:
            (resource,) = json.load(f)["resources"]
        self.assertTrue(resource.pop("@type").endswith(".tls.v3.Secret"))
        with open(config_json, encoding="utf-8") as f:
            config = json.load(f)
        config["static_resources"]["secrets"] = [resource]
        self.validate(json.dumps(config), ".json")
        resource["tls_certificat"] = resource.pop("tls_certificate")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(config, f)
        self.addCleanup(os.unlink, f.name)
        out = self.envoy_validate(f.name)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("tls_certificat", out.stdout + out.stderr)

    def test_a_node_tls_config_validates_with_its_sds_files_which_hold_secrets_envoy_reads(self):
        # Proves, against the pinned Envoy: with --node-tls-* (and --eds, whose seeds' cluster uses
        # the same TLS) the config validates with the two SDS files written beside it, and not
        # without either one; the secret in each is one Envoy parses (given as a static secret).
        certs = make_certs(self)
        node_tls = ["--node-tls-cert", certs["gw"], "--node-tls-key", certs["gw-key"], "--node-tls-ca", certs["ca"]]
        path = self.generate(["--eds", *node_tls])
        d = os.path.dirname(path)
        self.validate_file(path)
        for name in ("gateway-node-tls-sds.yaml", "gateway-node-ca-sds.yaml"):
            with self.subTest(missing=name):
                os.rename(os.path.join(d, name), os.path.join(d, name + ".away"))
                out = self.envoy_validate(path)
                os.rename(os.path.join(d, name + ".away"), os.path.join(d, name))
                self.assertNotEqual(out.returncode, 0, out.stdout + out.stderr)
                self.assertIn(name, out.stdout + out.stderr)

        config_json = os.path.join(d, "envoy.json")
        sds = [os.path.join(d, "cert.json"), os.path.join(d, "ca.json")]
        gen_envoy.main(["--eds", *node_tls, "--node-tls-sds", sds[0], "--node-tls-ca-sds", sds[1],
                        "--out", config_json])
        with open(config_json, encoding="utf-8") as f:
            config = json.load(f)
        config["static_resources"]["secrets"] = []
        for file in sds:
            with open(file, encoding="utf-8") as f:
                (resource,) = json.load(f)["resources"]
            self.assertTrue(resource.pop("@type").endswith(".tls.v3.Secret"))
            config["static_resources"]["secrets"].append(resource)
        self.assertEqual([r["name"] for r in config["static_resources"]["secrets"]],
                         ["gateway_node_certificate", "node_ca"])
        self.validate(json.dumps(config), ".json")

        # Why two files: one holding both secrets, named by both, is refused by Envoy.
        del config["static_resources"]["secrets"]
        with open(sds[0], encoding="utf-8") as f:
            both = json.load(f)
        with open(sds[1], encoding="utf-8") as f:
            both["resources"] += json.load(f)["resources"]
        with open(sds[0], "w", encoding="utf-8") as f:
            json.dump(both, f)
        text = json.dumps(config).replace(sds[1], sds[0])
        with open(config_json, "w", encoding="utf-8") as f:
            f.write(text)
        out = self.envoy_validate(config_json)
        self.assertIn("Unexpected SDS secrets length", out.stdout + out.stderr)

    def test_a_configmap_with_a_certificate_validates_once_mounted(self):
        # Proves: the keys of a ConfigMap made with --tls-cert and --node-tls-*, put in one
        # directory as a mount puts them (here a temporary one standing in for /etc/envoy), make a
        # config Envoy takes.
        certs = make_certs(self)
        text, _ = gen_envoy.render(["--k8s", "--configmap", "strata/strata-envoy", "--tls-cert", certs["gw"],
                                    "--tls-key", certs["gw-key"], "--tls-sds", "/etc/envoy/gateway-tls-sds.yaml",
                                    "--node-tls-cert", certs["gw"], "--node-tls-key", certs["gw-key"],
                                    "--node-tls-ca", certs["ca"],
                                    "--node-tls-sds", "/etc/envoy/gateway-node-tls-sds.yaml",
                                    "--node-tls-ca-sds", "/etc/envoy/gateway-node-ca-sds.yaml"])
        mount = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", mount])
        keys = re.split(r"^  ([a-z.-]+): \|\n", text.split("\ndata:\n", 1)[1], flags=re.MULTILINE)[1:]
        for key, body in zip(keys[::2], keys[1::2]):
            payload = "".join(line[4:] + "\n" for line in body.splitlines())
            for path in self.DEPLOYED_JWKS:
                payload = payload.replace(path, self.jwks())
            with open(os.path.join(mount, key), "w", encoding="utf-8") as f:
                f.write(payload.replace("/etc/envoy", mount))
        self.assertEqual(sorted(os.listdir(mount)), ["envoy.yaml", "gateway-node-ca-sds.yaml",
                                                     "gateway-node-tls-sds.yaml", "gateway-tls-sds.yaml"])
        self.validate_file(os.path.join(mount, "envoy.yaml"))



@unittest.skipUnless(os.environ.get("ENVOY"), "set ENVOY=/path/to/envoy to run Envoy")
class EnvoyReloads(unittest.TestCase):
    """The pinned Envoy, running a generated config: what it does with the SDS files."""

    def admin_get(self, admin: str, path: str) -> str:
        with urllib.request.urlopen(f"http://{admin}{path}", timeout=5) as r:
            return r.read().decode()

    def node_contexts(self, admin: str) -> list[tuple[list[str], list[str]]]:
        """The TLS contexts Envoy uses now, as (the CA serials, the certificate serials) each."""
        certs = json.loads(self.admin_get(admin, "/certs"))["certificates"]
        return [([c["serial_number"] for c in ctx["ca_cert"]], [c["serial_number"] for c in ctx["cert_chain"]])
                for ctx in certs]

    def wait_for(self, what: str, check, secs: float = 10):
        deadline = time.monotonic() + secs
        while True:
            try:
                if check():
                    return
            except OSError:
                pass  # Envoy's admin port is not up yet
            if time.monotonic() > deadline:
                self.fail(f"{what}: not within {secs} s")
            time.sleep(0.05)

    def test_the_clusters_to_the_nodes_take_a_certificate_and_a_ca_renamed_into_place(self):
        # Proves, against a running Envoy: with --node-tls-*, the clusters to the nodes (the two
        # member clusters) get the certificate and the CA from their SDS files (each secret taken,
        # none rejected); renaming a new key over the old one alone is refused (the pair does not
        # match) and the old certificate stays; renaming its certificate over the old one makes the
        # contexts new connections use hold the new certificate; renaming a new CA over the old one
        # makes them trust the new CA; Envoy is the same process throughout.
        old = make_certs(self)
        new = make_certs(self, ca=(old["ca"], old["ca-key"]))  # the same CA's, and another CA
        listen, admin_port, node = free_ports(3)
        admin = f"127.0.0.1:{admin_port}"
        path = self.generate_into(["--listen", f"127.0.0.1:{listen}", "--admin", admin, "--nodes",
                                   f"127.0.0.1:{node}", "--node-tls-cert", old["gw"], "--node-tls-key",
                                   old["gw-key"], "--node-tls-ca", old["ca"]])
        log = open(os.path.join(os.path.dirname(path), "envoy.log"), "w")
        self.addCleanup(log.close)
        envoy = subprocess.Popen([os.environ["ENVOY"], "-c", path, "-l", "info", "--use-dynamic-base-id"],
                                 stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(envoy.wait, 10)
        self.addCleanup(envoy.terminate)

        def stat(name: str) -> int:
            text = self.admin_get(admin, f"/stats?filter=^sds\\.{name}$")
            return int(text.split(":")[1])

        was = ([serial(old["ca"])], [serial(old["gw"])])
        new_cert, new_ca = serial(new["gw"]), serial(new["ca"])
        self.wait_for("Envoy took the SDS files", lambda: self.node_contexts(admin) == [was, was])
        for secret in ("gateway_node_certificate", "node_ca"):
            self.assertEqual(stat(f"{secret}.update_success"), 1, secret)
            self.assertEqual(stat(f"{secret}.update_rejected"), 0, secret)

        os.rename(new["gw-key"], old["gw-key"])
        self.wait_for("Envoy refused the key without its certificate",
                      lambda: stat("gateway_node_certificate.key_rotation_failed") > 0)
        self.assertEqual(self.node_contexts(admin), [was, was])

        os.rename(new["gw"], old["gw"])
        now = (was[0], [new_cert])
        self.assertNotEqual(now, was)
        self.wait_for("the contexts hold the new certificate", lambda: self.node_contexts(admin) == [now, now])

        os.rename(new["ca"], old["ca"])
        now = ([new_ca], [new_cert])
        self.wait_for("the contexts trust the new CA", lambda: self.node_contexts(admin) == [now, now])
        self.assertIsNone(envoy.poll(), "Envoy still runs")

    def generate_into(self, argv: list[str]) -> str:
        d = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        gen_envoy.main(argv + ["--out", os.path.join(d, "envoy.yaml")])
        return os.path.join(d, "envoy.yaml")


if __name__ == "__main__":
    unittest.main()
