"""A small YAML emitter for the Strata gateway's generated files, so that they can carry a header
comment with no PyYAML needed (the compose image runs the generator on a bare Python).

Part of the gateway generator (gateway/gen_envoy.py, gateway/gateway_tls.py). Standard library only.
"""

from __future__ import annotations

import json
import re

# Strings are always written as JSON strings, which YAML reads as double-quoted scalars.
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _scalar(v) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(v, ensure_ascii=False)


def _key(k: str) -> str:
    return k if _PLAIN_KEY.match(k) else json.dumps(k)


def to_yaml(value, indent: int = 0) -> str:
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{_key(k)}:")
                lines.append(to_yaml(v, indent + 1))
            else:
                lines.append(f"{pad}{_key(k)}: {_scalar(v) if not isinstance(v, (dict, list)) else ('{}' if isinstance(v, dict) else '[]')}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = to_yaml(item, indent + 1)
                # Put the first line of the item on the dash line.
                lines.append(f"{pad}- {inner.lstrip()}")
            else:
                lines.append(f"{pad}- {_scalar(item) if not isinstance(item, (dict, list)) else ('{}' if isinstance(item, dict) else '[]')}")
    else:
        lines.append(pad + _scalar(value))
    return "\n".join(lines)
