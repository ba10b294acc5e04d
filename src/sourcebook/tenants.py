"""Tenants: who owns a row. Every store is scoped to one tenant; `check_tenant` guards names.

A tenant name travels into SQL settings (Postgres row-level security), URLs and API keys,
so it is held to a small, safe alphabet rather than escaped everywhere it goes.
"""

from __future__ import annotations

import re

from .errors import InvalidTenantError

DEFAULT_TENANT = "default"
_TENANT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


def check_tenant(name: str) -> str:
    """Return `name` if it is a valid tenant name, else raise InvalidTenantError."""
    if not isinstance(name, str) or _TENANT_NAME.fullmatch(name) is None:
        raise InvalidTenantError(
            f"invalid tenant name {name!r}: use 1-63 lowercase letters, digits, '-' or '_', "
            f"starting with a letter or digit"
        )
    return name
