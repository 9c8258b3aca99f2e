"""Checks of deploy/k8s as `kustomize build` renders it (what `kubectl apply -k deploy/k8s` applies):
every manifest is part of the kustomization, only the nodes and the gateway may reach the nodes'
port, and both workloads spread their replicas over machines.

    python3 -m unittest deploy/test_k8s.py              # KUSTOMIZE names the binary (default kustomize)

deploy/validate.sh runs it. Needs kustomize and PyYAML (the project venv has PyYAML; ./dev
setup-kustomize installs kustomize).
"""

from __future__ import annotations

import os
import subprocess
import unittest
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
K8S = REPO / "deploy/k8s"
HOSTNAME = "kubernetes.io/hostname"


def built() -> list[dict]:
    """The objects `kustomize build deploy/k8s` renders."""
    out = subprocess.run([os.environ.get("KUSTOMIZE", "kustomize"), "build", str(K8S)],
                         check=True, capture_output=True, text=True).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def ident(obj: dict) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def selects(selector: dict, labels: dict) -> bool:
    """Whether a label selector selects a pod with `labels`. Only matchLabels is understood: a selector
    with matchExpressions fails the test instead of being judged wrong."""
    assert set(selector) <= {"matchLabels"}, f"selector not understood by this check: {selector}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


class Kustomization(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.objects = built()
        cls.by_id = {ident(o): o for o in cls.objects}
        # Every workload's pods: (kind/name, pod template labels, pod spec).
        cls.workloads = {f"{o['kind']}/{o['metadata']['name']}": o for o in cls.objects
                         if o["kind"] in ("StatefulSet", "Deployment", "DaemonSet", "Job", "CronJob")}
        cls.nodes = cls.by_id[("StatefulSet", "strata", "strata")]
        cls.gateway = cls.by_id[("Deployment", "strata", "strata-gateway")]

    @staticmethod
    def pod_labels(workload: dict) -> dict:
        return workload["spec"]["template"]["metadata"]["labels"]

    def test_every_manifest_is_in_the_kustomization(self):
        # Proves: each object of each deploy/k8s/*.yaml is rendered by kustomize, so `kubectl apply -k`
        # applies it and validate.sh validates it as built. A file left out of kustomization.yaml fails.
        in_files = set()
        for path in sorted(K8S.glob("*.yaml")):
            if path.name == "kustomization.yaml":
                continue
            with self.subTest(file=path.name):
                docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
                self.assertTrue(docs, f"{path.name} holds no object")
                missing = {ident(d) for d in docs} - set(self.by_id)
                self.assertFalse(missing, f"{path.name}: not in `kustomize build deploy/k8s`: {missing}")
                in_files |= {ident(d) for d in docs}
        self.assertEqual(set(self.by_id), in_files, "kustomize rendered objects no file holds")

    def test_only_the_nodes_and_the_gateway_may_reach_the_nodes_port(self):
        # Proves: exactly one NetworkPolicy selects the StatefulSet's pods and not the gateway's; it
        # restricts ingress; every rule admits pods of this namespace only (no namespace selector, no
        # address block, no empty `from`), and the workloads whose pods it admits are the StatefulSet
        # and the gateway Deployment, nothing else (another pod of the namespace, even one labelled
        # part-of strata, is not admitted); on TCP 7001, 6379 and 11211, the node container's ports,
        # which it listens on (the API, the Redis protocol, the memcached text protocol) and no other.
        policies = [o for o in self.objects if o["kind"] == "NetworkPolicy"
                    and selects(o["spec"]["podSelector"], self.pod_labels(self.nodes))]
        self.assertEqual(len(policies), 1, [ident(p) for p in policies])
        [policy] = policies
        spec = policy["spec"]
        self.assertEqual(policy["metadata"]["namespace"], self.nodes["metadata"]["namespace"])
        self.assertIn("Ingress", spec.get("policyTypes", ["Ingress"]))
        self.assertFalse(selects(spec["podSelector"], self.pod_labels(self.gateway)),
                         "the policy must not restrict the gateway's own listener")
        rules = spec.get("ingress", [])
        self.assertTrue(rules, "no ingress rule: nothing could reach the nodes, not even each other")

        peers = []
        for rule in rules:
            self.assertTrue(rule.get("from"), f"a rule without `from` admits every source: {rule}")
            self.assertEqual(rule.get("ports"), [{"protocol": "TCP", "port": port} for port in (7001, 6379, 11211)],
                             rule)
            for peer in rule["from"]:
                self.assertEqual(set(peer), {"podSelector"}, f"admits more than pods of the namespace: {peer}")
                self.assertTrue(peer["podSelector"].get("matchLabels"), f"an empty selector admits every pod: {peer}")
                peers.append(peer["podSelector"])
        admitted = {name for name, w in self.workloads.items()
                    if any(selects(p, self.pod_labels(w)) for p in peers)}
        self.assertEqual(admitted, {"StatefulSet/strata", "Deployment/strata-gateway"})
        stranger = {"app.kubernetes.io/name": "client", "app.kubernetes.io/part-of": "strata"}
        self.assertFalse(any(selects(p, stranger) for p in peers), "another pod of the namespace is admitted")

        [container] = self.nodes["spec"]["template"]["spec"]["containers"]
        ports = {p["containerPort"] for p in container["ports"]}
        env = {e["name"]: e.get("value") for e in container["env"]}
        self.assertEqual(ports, {7001, 6379, 11211})
        for name, port in (("STRATA_LISTEN", 7001), ("STRATA_RESP_LISTEN", 6379), ("STRATA_MEMCACHE_LISTEN", 11211)):
            self.assertTrue(env[name].endswith(f":{port}"), env[name])

    def test_the_nodes_and_the_gateway_spread_over_machines(self):
        # Proves: the StatefulSet and the gateway Deployment each prefer not to put two of their own
        # pods on one machine: a preferred anti-affinity term by hostname whose selector picks the
        # workload's own pods (and not the other workload's).
        for workload, other in ((self.nodes, self.gateway), (self.gateway, self.nodes)):
            name = f"{workload['kind']}/{workload['metadata']['name']}"
            with self.subTest(workload=name):
                affinity = workload["spec"]["template"]["spec"].get("affinity", {})
                terms = affinity.get("podAntiAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution", [])
                own = [t for t in terms if t["podAffinityTerm"]["topologyKey"] == HOSTNAME
                       and selects(t["podAffinityTerm"]["labelSelector"], self.pod_labels(workload))]
                self.assertEqual(len(own), 1, f"{name}: no preferred anti-affinity by hostname to its own pods")
                self.assertFalse(selects(own[0]["podAffinityTerm"]["labelSelector"], self.pod_labels(other)))
                self.assertGreater(own[0]["weight"], 0)


if __name__ == "__main__":
    unittest.main()
