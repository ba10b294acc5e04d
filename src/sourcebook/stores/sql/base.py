"""The base of the shared role mixins: a store's own transactions, handed out as `Sql`.

A store (sqlite/store.py, postgres/store.py) supplies `_read()` and `_write()`, context
managers yielding its driver's connection inside one transaction scoped to its tenant;
the shared mixins run their `?`-placeholder statements through `Sql` in its `dialect`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar

from .dialect import Dialect, Sql


class SharedSql:
    """What a shared mixin needs from the store it is mixed into."""

    dialect: ClassVar[Dialect]
    tenant: str

    def _read(self) -> AbstractContextManager[Any]:
        """A read transaction on the store's connection (each store defines it)."""
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Any]:
        """A write transaction on the store's connection (each store defines it)."""
        raise NotImplementedError

    def _searches_changed(self, sql: Sql) -> None:
        """Move `search_generation` on, inside the write transaction that changed what a search can
        return (each store keeps the number its own way)."""
        raise NotImplementedError

    @contextmanager
    def _reading(self) -> Iterator[Sql]:
        with self._read() as conn:
            yield Sql(conn, self.dialect)

    @contextmanager
    def _writing(self) -> Iterator[Sql]:
        with self._write() as conn:
            yield Sql(conn, self.dialect)
