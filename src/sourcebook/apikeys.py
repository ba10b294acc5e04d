"""API keys for the HTTP service: who may call it, for which tenant, with which role where.

A key is a high-entropy random secret shown once at creation; the database keeps only its
SHA-256 (a fast hash is enough for 256 random bits: there is nothing to brute-force, unlike
a password) and a short prefix that identifies the key in listings and logs. Each key
belongs to one tenant and grants a role per collection, or on every collection with "*".
Roles are ordered: read (search, ask, chat, list) < write (add, delete, reindex documents)
< admin (create and delete collections).

Where keys live is a `KeyStore`; a store's `api_keys()` gives the one kept in its own
database (stores/sqlite/keys.py, stores/postgres/keys.py).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from .errors import ConfigurationError, StoreError
from .tenants import check_tenant

ALL_COLLECTIONS = "*"
SECRET_PREFIX = "sb_"
PREFIX_CHARS = 12
"""Characters of the secret kept in clear (SECRET_PREFIX included): enough to tell keys apart."""


class Role(StrEnum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def includes(self, other: Role) -> bool:
        """An admin may do what a writer may, a writer what a reader may."""
        order = list(Role)
        return order.index(self) >= order.index(other)


class ApiKeyNotFoundError(StoreError):
    """No API key has the given id or prefix."""

    code = "api_key_not_found"


class InvalidGrantError(ConfigurationError):
    """A key's grants are malformed (an unknown role, no collection at all)."""

    code = "invalid_grant"


@dataclass(frozen=True)
class ApiKey:
    """A key's public record (never its secret)."""

    id: str
    prefix: str
    name: str
    tenant: str
    grants: Mapping[str, Role]
    """Collection name (or ALL_COLLECTIONS) -> role."""
    created_at: str
    revoked_at: str | None = None

    def role_on(self, collection: str) -> Role | None:
        """The key's role on `collection`: its own grant, else the grant on every collection."""
        return self.grants.get(collection) or self.grants.get(ALL_COLLECTIONS)

    def allows(self, role: Role, collection: str | None = None) -> bool:
        """May this key act as `role` on `collection` (None: on every collection, e.g. to create one)?"""
        granted = self.grants.get(ALL_COLLECTIONS) if collection is None else self.role_on(collection)
        return granted is not None and granted.includes(role)

    def readable(self) -> tuple[str, ...] | None:
        """The collections this key may read, or None for all of them."""
        if ALL_COLLECTIONS in self.grants:
            return None
        return tuple(sorted(self.grants))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "prefix": self.prefix, "name": self.name, "tenant": self.tenant,
            "grants": {collection: str(role) for collection, role in sorted(self.grants.items())},
            "created_at": self.created_at, "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True)
class NewKey:
    """A key just created: its record and its secret, which is never shown again."""

    key: ApiKey
    secret: str = field(repr=False)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    """`sb_` and 43 URL-safe characters: 256 random bits."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def make_grants(role: str, collections: list[str] | tuple[str, ...] = ()) -> dict[str, Role]:
    """`role` on each of `collections`, or on every collection when none is named."""
    try:
        parsed = Role(role)
    except ValueError:
        raise InvalidGrantError(f"unknown role {role!r}; use one of {', '.join(Role)}") from None
    return {name: parsed for name in (collections or (ALL_COLLECTIONS,))}


@runtime_checkable
class KeyStore(Protocol):
    """Where API keys live. Implementations pass sourcebook.testing.KeyStoreSuite."""

    authenticates_locally: bool
    """True when `authenticate` is a local indexed read that never waits on a network or a write
    lock, so the server may call it on its event loop (server/context.py); False sends it to a
    worker thread."""

    def create(self, name: str, tenant: str, grants: Mapping[str, Role]) -> NewKey:
        """A new key for `tenant`; raises InvalidTenantError or InvalidGrantError for bad input."""

    def list(self, tenant: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
        """Keys, oldest first, of one tenant or all."""

    def authenticate(self, secret: str) -> ApiKey | None:
        """The live (not revoked) key whose secret this is, else None."""

    def revoke(self, key: str) -> ApiKey:
        """Revoke the key with this id or prefix; raises ApiKeyNotFoundError (also when ambiguous)."""

    def close(self) -> None: ...


T = TypeVar("T")


def the_live_key(rows: Sequence[T], key: str) -> T:
    """The one live key row an id or prefix names (what every KeyStore.revoke looks up), else
    ApiKeyNotFoundError: a prefix shared by two live keys is ambiguous, not a choice."""
    if len(rows) != 1:
        found = "no live key" if not rows else f"{len(rows)} keys"
        raise ApiKeyNotFoundError(f"{found} with id or prefix {key!r}; see `sourcebook keys list`")
    return rows[0]


def check_new_key(tenant: str, grants: Mapping[str, Role]) -> None:
    """What every KeyStore.create checks before writing."""
    check_tenant(tenant)
    if not grants:
        raise InvalidGrantError("a key needs a role on at least one collection (or on '*', every collection)")
    for collection, role in grants.items():
        if not collection or not isinstance(role, Role):
            raise InvalidGrantError(f"bad grant {collection!r}: {role!r}; use a collection name and a Role")
