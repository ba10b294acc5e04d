"""API keys in the knowledge base's SQLite file (table `api_keys`, migration add_api_keys of schema.py).

A connection of its own rather than the document store's: key lookups happen on every
HTTP request and are tiny, and WAL mode lets them run beside the store's writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime

from ...apikeys import PREFIX_CHARS, ApiKey, NewKey, Role, check_new_key, hash_secret, new_secret, the_live_key
from ...errors import StoreError
from .schema import connect

_COLUMNS = "id, prefix, name, tenant, grants, created_at, revoked_at"


class SQLiteKeyStore:
    """The `KeyStore` protocol on a Sourcebook SQLite file."""

    authenticates_locally = True  # one indexed read on a connection of its own

    def __init__(self, path: str) -> None:
        connect(path)[0].close()  # creates or migrates the file, refuses a foreign one
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 5000")

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"API keys in {self.path}: {exc}") from exc

    def create(self, name: str, tenant: str, grants: Mapping[str, Role]) -> NewKey:
        check_new_key(tenant, grants)
        secret = new_secret()
        key = ApiKey(
            id=uuid.uuid4().hex[:12], prefix=secret[:PREFIX_CHARS], name=name, tenant=tenant,
            grants=dict(grants), created_at=datetime.now(UTC).isoformat(),
        )
        with self._cursor() as conn:
            conn.execute(
                "INSERT INTO api_keys (id, prefix, secret_hash, name, tenant, grants, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key.id, key.prefix, hash_secret(secret), name, tenant, json.dumps(key.to_dict()["grants"]), key.created_at),
            )
        return NewKey(key, secret)

    def list(self, tenant: str | None = None, include_revoked: bool = False) -> list[ApiKey]:
        where = ["1"]
        params: list[str] = []
        if tenant is not None:
            where.append("tenant = ?")
            params.append(tenant)
        if not include_revoked:
            where.append("revoked_at IS NULL")
        with self._cursor() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE {' AND '.join(where)} ORDER BY created_at, id", params
            ).fetchall()
        return [_key(row) for row in rows]

    def authenticate(self, secret: str) -> ApiKey | None:
        with self._cursor() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL", (hash_secret(secret),)
            ).fetchone()
        return None if row is None else _key(row)

    def revoke(self, key: str) -> ApiKey:
        with self._cursor() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM api_keys WHERE (id = ? OR prefix = ?) AND revoked_at IS NULL", (key, key)
            ).fetchall()
            row = the_live_key(rows, key)
            revoked_at = datetime.now(UTC).isoformat()
            conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ?", (revoked_at, row[0]))
        return replace(_key(row), revoked_at=revoked_at)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _key(row: tuple[str, ...]) -> ApiKey:
    key_id, prefix, name, tenant, grants, created_at, revoked_at = row
    return ApiKey(
        id=key_id, prefix=prefix, name=name, tenant=tenant,
        grants={collection: Role(role) for collection, role in json.loads(grants).items()},
        created_at=created_at, revoked_at=revoked_at,
    )
