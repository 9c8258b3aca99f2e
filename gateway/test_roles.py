"""Tests of gateway/roles.py: the role checks the gateway makes, from the nodes' table.

    python3 -m unittest discover -s gateway -p 'test_*.py'

That roles.json is the nodes' own table is checked by the node's test
(auth::access::tests::the_gateways_role_table_is_the_nodes); what a client meets is tested against
real Envoy and nodes in storage/harness/tests/gateway_roles.rs.
"""

from __future__ import annotations

import re
import sys
import unittest
from pathlib import Path

GATEWAY = Path(__file__).resolve().parent
sys.path.insert(0, str(GATEWAY))

import roles  # noqa: E402

RANK = {"open": 0, "read": 1, "write": 2, "admin": 3}


def needs(table: dict, method: str, path: str) -> str | None:
    """The role the gateway requires of a token for `method path` (path without its query), as
    its RBAC filter decides: "admin", "write", or None (the node decides)."""
    for role in ("admin", "write"):
        for rule in roles.rules(table, role):
            if rule.grpc:
                if path == rule.path:
                    return role
            elif method == rule.method and re.fullmatch(roles.template_regex(rule.path), path):
                return role
    return None


class Roles(unittest.TestCase):
    def setUp(self):
        self.table = roles.load()

    def test_the_table_names_the_admin_and_write_routes(self):
        # Proves the gateway's table has what docs/api-rest.md's "Who may do what" says, as the
        # gateway will match it (ids and keys spelled as a client may spell them).
        cases = [
            ("DELETE", "/v1/cluster/members/3", "admin"),
            ("DELETE", "/v1/cluster/members/%33", "admin"),
            ("POST", "/v1/cluster/members", "admin"),
            ("POST", "/v1/cluster/members/4/promote", "admin"),
            ("POST", "/v1/cluster/leader", "admin"),
            ("POST", "/v1/cluster/compact", "admin"),
            ("POST", "/v1/cluster/snapshot", "admin"),
            ("GET", "/v1/backup", "admin"),
            ("POST", "/strata.v1.Cluster/RemoveMember", "admin"),
            ("POST", "/strata.v1.Cluster/TransferLeader", "admin"),
            ("POST", "/strata.v1.KV/Backup", "admin"),
            ("PUT", "/v1/kv/a/b//c", "write"),
            ("DELETE", "/v1/kv/a", "write"),
            ("POST", "/v1/txn", "write"),
            ("POST", "/v1/leases/7/keepalive", "write"),
            ("POST", "/strata.v1.KV/Put", "write"),
            ("POST", "/strata.v1.Lease/KeepAlive", "write"),
            ("GET", "/v1/kv/a", None),
            ("GET", "/v1/cluster/members", None),
            ("GET", "/v1/watch", None),
            ("POST", "/strata.v1.KV/Watch", None),
            ("GET", "/health/ready", None),
            ("GET", "/", None),
        ]
        for method, path, want in cases:
            with self.subTest(method=method, path=path):
                self.assertEqual(needs(self.table, method, path), want)

    def test_every_route_the_node_checks_is_in_the_table(self):
        # Proves the table is whole: the node's write and admin routes, REST and gRPC, by name.
        grpc = {r["path"] for r in self.table["grpc"]}
        self.assertIn("/strata.v1.Cluster/RemoveMember", grpc)
        self.assertTrue(all(RANK.get(r["role"], -1) >= 0 or r["role"] == "internal"
                            for r in self.table["rest"] + self.table["grpc"]))
        self.assertGreaterEqual(len(roles.rules(self.table, "admin")), 13)

    def test_path_templates_become_whole_path_regexes(self):
        self.assertEqual(roles.template_regex("/v1/cluster/members/{id}/promote"),
                         "/v1/cluster/members/[^/]+/promote")
        self.assertEqual(roles.template_regex("/v1/kv/{key}"), "/v1/kv/.+")
        self.assertIsNone(re.fullmatch(roles.template_regex("/v1/cluster/members/{id}"),
                                       "/v1/cluster/members/3/promote"))

    def test_admin_routes_need_a_token_and_the_admin_role(self):
        # Proves the JWT filter requires a token on exactly the admin routes, and the RBAC filter
        # lets through: below-write routes to anyone, writes to write, admin or no token, admin
        # routes to admin only.
        admin = roles.rules(self.table, "admin")
        jwt = roles.jwt_rules(self.table)
        self.assertEqual(len(jwt), len(admin) + 1)
        self.assertEqual(jwt[-1], {"match": {"prefix": "/"}, "requires": {"allow_missing": {}}})
        policies = roles.rbac_filter(self.table)["typed_config"]["rules"]["policies"]
        self.assertEqual(policies["below-write"]["principals"], [{"any": True}])

        def role_of(principal: dict) -> str | None:
            if "not_id" in principal:
                return "no token"
            return principal["sourced_metadata"]["metadata_matcher"]["value"]["string_match"]["exact"]

        self.assertEqual([role_of(p) for p in policies["write"]["principals"]], ["no token", "write", "admin"])
        self.assertEqual([role_of(p) for p in policies["admin"]["principals"]], ["admin"])
        self.assertEqual(len(policies["admin"]["permissions"][0]["or_rules"]["rules"]), len(admin))


if __name__ == "__main__":
    unittest.main()
