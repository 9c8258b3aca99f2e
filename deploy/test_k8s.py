"""Checks of deploy/k8s as `kustomize build` renders it (what `kubectl apply -k deploy/k8s` applies):
every manifest is part of the kustomization.

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


def built() -> list[dict]:
    """The objects `kustomize build deploy/k8s` renders."""
    out = subprocess.run([os.environ.get("KUSTOMIZE", "kustomize"), "build", str(K8S)],
                         check=True, capture_output=True, text=True).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def ident(obj: dict) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


class Kustomization(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.objects = built()
        cls.by_id = {ident(o): o for o in cls.objects}

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


if __name__ == "__main__":
    unittest.main()
