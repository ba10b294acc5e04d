"""The `KeyStore` contract (API keys of the HTTP service), run against every implementation.

To add one, append a `pytest.param(factory, id=...)` to KEY_STORE_FACTORIES: a factory takes
the fixture request (for `tmp_path` or a fresh database) and returns a fresh, empty key store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sourcebook.apikeys import (
    ALL_COLLECTIONS,
    ApiKeyNotFoundError,
    InvalidGrantError,
    KeyStore,
    Role,
    hash_secret,
    make_grants,
)
from sourcebook.errors import InvalidTenantError
from sourcebook.stores.postgres import PostgresKeyStore, PostgresStore
from sourcebook.stores.sqlite import SQLiteKeyStore

KEY_STORE_FACTORIES = [
    pytest.param(lambda request: SQLiteKeyStore(str(request.getfixturevalue("tmp_path") / "keys.db")), id="sqlite"),
    pytest.param(
        lambda request: PostgresKeyStore(PostgresStore(request.getfixturevalue("migrated_postgres_dsn")), close_store=True),
        id="postgres",
    ),
]


@pytest.fixture(params=KEY_STORE_FACTORIES)
def keys(request: pytest.FixtureRequest) -> Iterator[KeyStore]:
    factory: Callable[[pytest.FixtureRequest], KeyStore] = request.param
    store = factory(request)
    yield store
    store.close()


def test_implements_the_protocol(keys: KeyStore) -> None:
    assert isinstance(keys, KeyStore)


def test_create_then_authenticate(keys: KeyStore) -> None:
    created = keys.create("ci", "acme", make_grants("write", ("docs", "wiki")))
    assert created.secret.startswith("sb_") and len(created.secret) > 40
    assert created.key.prefix == created.secret[:12]
    found = keys.authenticate(created.secret)
    assert found == created.key
    assert found.tenant == "acme" and dict(found.grants) == {"docs": Role.WRITE, "wiki": Role.WRITE}
    assert keys.authenticate(created.secret + "x") is None
    assert keys.authenticate(hash_secret(created.secret)) is None  # the stored hash is not a key


def test_list_by_tenant_and_revoke(keys: KeyStore) -> None:
    first = keys.create("a", "acme", make_grants("read")).key
    second = keys.create("b", "acme", make_grants("admin")).key
    other = keys.create("c", "globex", make_grants("read")).key
    assert [k.id for k in keys.list()] == [first.id, second.id, other.id]
    assert [k.id for k in keys.list("acme")] == [first.id, second.id]
    revoked = keys.revoke(first.prefix)
    assert revoked.id == first.id and revoked.revoked_at
    assert [k.id for k in keys.list("acme")] == [second.id]
    assert [k.id for k in keys.list("acme", include_revoked=True)] == [first.id, second.id]
    with pytest.raises(ApiKeyNotFoundError):
        keys.revoke(first.id)  # already revoked
    with pytest.raises(ApiKeyNotFoundError):
        keys.revoke("nope")


def test_revoked_keys_stop_working(keys: KeyStore) -> None:
    created = keys.create("a", "acme", make_grants("read"))
    keys.revoke(created.key.id)
    assert keys.authenticate(created.secret) is None


@pytest.mark.parametrize("tenant", ["", "Acme", "a b", "../x"])
def test_bad_tenants_are_refused(keys: KeyStore, tenant: str) -> None:
    with pytest.raises(InvalidTenantError):
        keys.create("x", tenant, make_grants("read"))


def test_bad_grants_are_refused(keys: KeyStore) -> None:
    with pytest.raises(InvalidGrantError):
        keys.create("x", "acme", {})
    with pytest.raises(InvalidGrantError):
        make_grants("owner")


def test_roles_are_ordered_and_scoped() -> None:
    key = make_grants("write", ("docs",)) | {"wiki": Role.READ}
    from sourcebook.apikeys import ApiKey

    record = ApiKey("id", "sb_", "n", "acme", key, "now")
    assert record.allows(Role.READ, "docs") and record.allows(Role.WRITE, "docs")
    assert not record.allows(Role.ADMIN, "docs")
    assert record.allows(Role.READ, "wiki") and not record.allows(Role.WRITE, "wiki")
    assert not record.allows(Role.READ, "other") and not record.allows(Role.READ, None)
    assert record.readable() == ("docs", "wiki")
    everywhere = ApiKey("id", "sb_", "n", "acme", {ALL_COLLECTIONS: Role.READ, "docs": Role.ADMIN}, "now")
    assert everywhere.readable() is None and everywhere.allows(Role.READ, "anything")
    assert everywhere.allows(Role.ADMIN, "docs") and not everywhere.allows(Role.WRITE, "other")
