"""API keys in the Postgres store's database (table `api_keys`, migration add_api_keys of schema.py).

The table is global, not under row-level security: authenticating a request is how its
tenant becomes known. It shares the document store's connection pool.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from ...apikeys import PREFIX_CHARS, ApiKey, NewKey, Role, check_new_key, hash_secret, new_secret, the_live_key

if TYPE_CHECKING:
    from .store import PostgresStore

_COLUMNS = "id, prefix, name, tenant, grants, created_at, revoked_at"


class PostgresKeyStore:
    """The `KeyStore` protocol on a Sourcebook Postgres database."""

    authenticates_locally = False  # a network round trip

    def __init__(self, store: PostgresStore, *, close_store: bool = False) -> None:
        """`close_store`: `close` closes the document store too (a key store opened on its own)."""
        self._store = store
        self._close_store = close_store

    def create(self, name: str, tenant: str, grants: Mapping[str, Role]) -> NewKey:
        check_new_key(tenant, grants)
        secret = new_secret()
        key = ApiKey(
            id=uuid.uuid4().hex[:12], prefix=secret[:PREFIX_CHARS], name=name, tenant=tenant,
            grants=dict(grants), created_at=datetime.now(UTC).isoformat(),
        )
        with self._store.unscoped_transaction() as conn:
            conn.execute(
                "INSERT INTO api_keys (id, prefix, secret_hash, name, tenant, grants, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (key.id, key.prefix, hash_secret(secret), name, tenant, Jsonb(key.to_dict()["grants"]), key.created_at),
            )
        return NewKey(key, secret)

    def list(self, tenant: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
        with self._store.unscoped_transaction() as conn:
            rows = conn.execute(
                f"""SELECT {_COLUMNS} FROM api_keys
                    WHERE (%(tenant)s::text IS NULL OR tenant = %(tenant)s) AND (%(all)s OR revoked_at IS NULL)
                    ORDER BY created_at, id""",
                {"tenant": tenant, "all": include_revoked},
            ).fetchall()
        return [_key(row) for row in rows]

    def authenticate(self, secret: str) -> ApiKey | None:
        with self._store.unscoped_transaction() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE secret_hash = %s AND revoked_at IS NULL", (hash_secret(secret),)
            ).fetchone()
        return None if row is None else _key(row)

    def revoke(self, key: str) -> ApiKey:
        with self._store.unscoped_transaction() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE (id = %s OR prefix = %s) AND revoked_at IS NULL FOR UPDATE",
                (key, key),
            ).fetchall()
            row = the_live_key(rows, key)
            revoked_at = datetime.now(UTC)
            conn.execute("UPDATE api_keys SET revoked_at = %s WHERE id = %s", (revoked_at, row[0]))
        return replace(_key(row), revoked_at=revoked_at.isoformat())

    def close(self) -> None:
        """The pool belongs to the document store: closed only with `close_store`."""
        if self._close_store:
            self._store.close()


def _key(row: tuple[Any, ...]) -> ApiKey:
    key_id, prefix, name, tenant, grants, created_at, revoked_at = row
    return ApiKey(
        id=key_id, prefix=prefix, name=name, tenant=tenant,
        grants={collection: Role(role) for collection, role in grants.items()},
        created_at=created_at.astimezone(UTC).isoformat(),
        revoked_at=None if revoked_at is None else revoked_at.astimezone(UTC).isoformat(),
    )
