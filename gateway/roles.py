"""The roles the Strata gateway checks at the edge, before any node sees a request.

Part of the gateway generator (gateway/gen_envoy.py puts ``jwt_rules`` into its JWT filter and
``rbac_filter`` after it, when it is given the cluster's keys). Standard library only.

What each route needs comes from the nodes' own table: ``roles.json`` beside this file is written
from storage/server/src/auth/access.rs by a test of the node, which fails when the two differ
(REST routes by method and path template, from the API document; gRPC methods by path). The
gateway checks only what a token's role cannot do:

* a route that needs ``admin`` (membership changes, leader transfer, compaction, snapshots,
  backups) needs a token (the JWT filter answers 401 ``UNAUTHENTICATED`` without one: requests
  without a token have the nodes' anonymous role, which is never admin) whose role is admin (else
  403 ``PERMISSION_DENIED``);
* a route that needs ``write`` is refused 403 to a ``read`` token; without a token it goes on,
  and the node decides what its anonymous role may do;
* everything else goes on, and the node decides.

Every node still checks every request: the gateway's check saves the nodes the work and keeps a
refused request from reaching one, it is not the only check.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROLES_FILE = Path(__file__).with_name("roles.json")
JWT_FILTER = "envoy.filters.http.jwt_authn"
# Where the JWT filter puts a verified token's claims (its payload_in_metadata).
PAYLOAD_KEY = "jwt_payload"
PROVIDER = "strata"


def load(path: Path = ROLES_FILE) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def template_regex(template: str) -> str:
    """A path template of the API document as an RE2 regex of the whole path: ``{key}`` (a key may
    hold "/") spans segments, any other parameter is one segment."""
    out, pos = [], 0
    for m in re.finditer(r"\{([A-Za-z_]+)\}", template):
        out.append(re.escape(template[pos:m.start()]))
        out.append(".+" if m.group(1) == "key" else "[^/]+")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return "".join(out)


class Rule:
    """One route of the table: its method (None for gRPC, always POST), path and needed role."""

    def __init__(self, method: str | None, path: str, role: str, grpc: bool):
        self.method, self.path, self.role, self.grpc = method, path, role, grpc

    def route_match(self) -> dict:
        """The route (JWT filter rule) match of exactly this route."""
        if self.grpc:
            return {"path": self.path}
        return {"safe_regex": {"regex": template_regex(self.path)},
                "headers": [{"name": ":method", "string_match": {"exact": self.method}}]}

    def permission(self) -> dict:
        """The RBAC permission of exactly this route (its path without the query)."""
        if self.grpc:
            return {"url_path": {"path": {"exact": self.path}}}
        return {"and_rules": {"rules": [
            {"url_path": {"path": {"safe_regex": {"regex": template_regex(self.path)}}}},
            {"header": {"name": ":method", "string_match": {"exact": self.method}}},
        ]}}


def rules(table: dict, role: str) -> list[Rule]:
    """The routes of `table` that need exactly `role`."""
    rest = [Rule(r["method"], r["path"], r["role"], grpc=False) for r in table["rest"]]
    grpc = [Rule(None, r["path"], r["role"], grpc=True) for r in table["grpc"]]
    return [r for r in rest + grpc if r.role == role]


def jwt_rules(table: dict) -> list[dict]:
    """The JWT filter's rules: a token is required on admin routes, optional everywhere else."""
    required = [{"match": r.route_match(), "requires": {"provider_name": PROVIDER}}
                for r in rules(table, "admin")]
    return required + [{"match": {"prefix": "/"}, "requires": {"allow_missing": {}}}]


def _claims(path: list[str], value: dict) -> dict:
    """A principal matching the verified token's claims (the JWT filter's dynamic metadata)."""
    return {"sourced_metadata": {"metadata_matcher": {
        "filter": JWT_FILTER, "path": [{"key": key} for key in [PAYLOAD_KEY] + path], "value": value}}}


def _role_is(role: str) -> dict:
    return _claims(["role"], {"string_match": {"exact": role}})


_NO_TOKEN = {"not_id": _claims([], {"present_match": True})}


def _any_of(permissions: list[dict]) -> dict:
    return {"or_rules": {"rules": permissions}}


def rbac_filter(table: dict) -> dict:
    """Envoy's RBAC filter, after the JWT filter: what a verified token's role may not do is
    refused 403 here. A request is let through when one policy allows it."""
    admin = [r.permission() for r in rules(table, "admin")]
    write = [r.permission() for r in rules(table, "write")]
    return {
        "name": "envoy.filters.http.rbac",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC",
            "rules": {"action": "ALLOW", "policies": {
                # Whatever needs less than write: the node decides, as for a request without a token.
                "below-write": {"permissions": [{"not_rule": _any_of(admin + write)}],
                                "principals": [{"any": True}]},
                # Writes: a write or admin token, or none (the node's anonymous role decides).
                "write": {"permissions": [_any_of(write)],
                          "principals": [_NO_TOKEN, _role_is("write"), _role_is("admin")]},
                "admin": {"permissions": [_any_of(admin)], "principals": [_role_is("admin")]},
            }},
        },
    }
