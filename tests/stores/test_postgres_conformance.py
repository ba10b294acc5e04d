"""The Postgres store against the conformance suites of `sourcebook.testing`: each test gets a
fresh database of the embedded server (`migrated_postgres_dsn`, tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sourcebook.stores import Store
from sourcebook.stores.postgres import PostgresStore
from sourcebook.testing import StoreConformance


class TestPostgresStore(StoreConformance):
    @pytest.fixture
    def empty_store(self, migrated_postgres_dsn: str) -> Iterator[Store]:
        store = PostgresStore(migrated_postgres_dsn)
        yield store
        store.close()
