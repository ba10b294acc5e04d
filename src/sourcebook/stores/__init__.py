"""Stores and their registry: `open_store` turns a path or URL into a `Store`.

A plain path (or ``sqlite:///relative.db``, ``sqlite:////absolute.db``) opens the
embedded SQLite store. Other URL schemes are looked up in a dict of factories and then
in the ``sourcebook.stores`` entry-point group, so a third-party package can add a
back end without forking: its entry point is named after the URL scheme and points at
a callable taking the full URL and returning a `Store`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

from ..errors import ConfigurationError
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
)
from .sqlite import SQLiteStore

StoreFactory = Callable[[str], Store]
ENTRY_POINT_GROUP = "sourcebook.stores"
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


def _open_postgres(url: str) -> Store:
    """psycopg and pgvector are the optional 'postgres' extra: imported only for a Postgres URL."""
    try:
        from .postgres import open_postgres
    except ImportError as exc:
        raise ConfigurationError(
            f"the Postgres store needs the 'postgres' extra ({exc}): pip install 'sourcebook[postgres]'"
        ) from exc
    return open_postgres(url)


_FACTORIES: dict[str, StoreFactory] = {
    "sqlite": _open_sqlite,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}


def register_store(scheme: str, factory: StoreFactory) -> None:
    """Make `open_store` hand URLs of `scheme` to `factory` (replacing any earlier one)."""
    _FACTORIES[scheme.lower()] = factory


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
    factory = _FACTORIES.get(scheme) or _entry_point_factory(scheme)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise ConfigurationError(
            f"no store handles {scheme}:// URLs (known: {known}); install a package that provides "
            f"a {ENTRY_POINT_GROUP!r} entry point named {scheme!r}, or give a SQLite file path"
        )
    return factory(target)


def _entry_point_factory(scheme: str) -> StoreFactory | None:
    found = entry_points(group=ENTRY_POINT_GROUP, name=scheme)
    return next((entry_point.load() for entry_point in found), None)


__all__ = [
    "ChatMessageRecord",
    "ChatSessionRecord",
    "ChatStore",
    "CollectionInfo",
    "ContextCache",
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
