"""Stores and their registry: `open_store` turns a path or URL into a `Store`.

A plain path (or ``sqlite:///relative.db``, ``sqlite:////absolute.db``) opens the
embedded SQLite store. Other URL schemes name a store factory of the `STORES` kind of the
plugin registry (`sourcebook.plugins`): registered with `register_store`, installed under
the ``sourcebook.stores`` entry-point group, or built in (SQLite, and Postgres, whose
module and its psycopg are imported only for a Postgres URL). So a third-party package
adds a back end without forking: its entry point is named after the URL scheme and
points at a callable taking the full URL and returning a `Store`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..errors import ConfigurationError
from ..plugins import Builtin, PluginKind
from ..tenants import DEFAULT_TENANT, check_tenant
from .base import (
    ChatMessageRecord,
    ChatSessionRecord,
    ChatStore,
    CollectionInfo,
    ContextCache,
    DocumentStore,
    GraphStore,
    KeyStoreProvider,
    SearchStore,
    Store,
    SummaryCache,
)
from .sqlite import SQLiteStore

StoreFactory = Callable[[str], Store]
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _open_sqlite(url: str) -> Store:
    """``sqlite:///x.db`` is the relative path x.db, ``sqlite:////x.db`` the absolute /x.db
    (the SQLAlchemy convention, which users already know)."""
    rest = url[len("sqlite://") :]
    if not rest.startswith("/") or len(rest) == 1:
        raise ConfigurationError(
            f"bad SQLite URL {url!r}: write sqlite:///relative/path.db or sqlite:////absolute/path.db"
        )
    return SQLiteStore(rest[1:])


def _postgres(scheme: str) -> Builtin:
    """psycopg and pgvector are the optional 'postgres' extra, imported with the module."""
    return Builtin(scheme, "sourcebook.stores.postgres:open_postgres", extra="postgres", title="the Postgres store")


STORES: PluginKind[StoreFactory] = PluginKind(
    "store",
    "sourcebook.stores",
    [Builtin("sqlite", "sourcebook.stores:_open_sqlite"), _postgres("postgresql"), _postgres("postgres")],
)


def register_store(scheme: str, factory: StoreFactory) -> None:
    """Make `open_store` hand URLs of `scheme` to `factory` (replacing any earlier one)."""
    STORES.register(scheme.lower(), factory)


def open_store(url_or_path: str | Path, tenant: str = DEFAULT_TENANT) -> Store:
    """Open the store a path or URL names, scoped to `tenant`.

    Raises ConfigurationError for unknown schemes and InvalidTenantError for a bad tenant.
    """
    check_tenant(tenant)
    store = _open_default_tenant(str(url_or_path))
    return store if tenant == DEFAULT_TENANT else store.for_tenant(tenant)


def _open_default_tenant(target: str) -> Store:
    match = _SCHEME.match(target)
    if match is None:
        return SQLiteStore(target)
    scheme = match.group(1).lower()
    factory = STORES.get(scheme)
    if factory is None:
        raise ConfigurationError(
            f"no store handles {scheme}:// URLs (known: {', '.join(STORES.names())}); install a package that "
            f"provides a {STORES.group!r} entry point named {scheme!r}, or give a SQLite file path"
        )
    return factory(target)


__all__ = [
    "STORES",
    "ChatMessageRecord",
    "ChatSessionRecord",
    "ChatStore",
    "CollectionInfo",
    "ContextCache",
    "SummaryCache",
    "DocumentStore",
    "GraphStore",
    "KeyStoreProvider",
    "SQLiteStore",
    "SearchStore",
    "Store",
    "StoreFactory",
    "open_store",
    "register_store",
]
