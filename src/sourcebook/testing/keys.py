"""The KeyStoreProvider role: where the HTTP service's API keys live.

A key is shown once, at creation; the store keeps only its hash, so the hash itself never
authenticates. Revoked keys stop working at once.
"""

from __future__ import annotations

import pytest

from sourcebook.apikeys import ApiKeyNotFoundError, InvalidGrantError, KeyStore, Role, hash_secret, make_grants
from sourcebook.errors import InvalidTenantError


class KeyStoreSuite:
    """The KeyStore contract: subclass it and override `key_store` (see sourcebook.testing)."""

    @pytest.fixture
    def key_store(self) -> KeyStore:
        """A fresh key store without a key, closed after the test: a back end's subclass overrides this."""
        pytest.fail(
            f"{type(self).__name__} must override the `key_store` fixture: yield a fresh, empty key store "
            "of your back end, then close it (see sourcebook.testing)"
        )

    def test_implements_the_key_store_protocol(self, key_store: KeyStore) -> None:
        assert isinstance(key_store, KeyStore)

    def test_create_then_authenticate(self, key_store: KeyStore) -> None:
        created = key_store.create("ci", "acme", make_grants("write", ("docs", "wiki")))
        assert created.secret.startswith("sb_") and len(created.secret) > 40
        assert created.key.prefix == created.secret[:12]
        found = key_store.authenticate(created.secret)
        assert found == created.key
        assert found.tenant == "acme" and dict(found.grants) == {"docs": Role.WRITE, "wiki": Role.WRITE}
        assert key_store.authenticate(created.secret + "x") is None
        assert key_store.authenticate(hash_secret(created.secret)) is None  # the stored hash is not a key

    def test_list_by_tenant_and_revoke(self, key_store: KeyStore) -> None:
        first = key_store.create("a", "acme", make_grants("read")).key
        second = key_store.create("b", "acme", make_grants("admin")).key
        other = key_store.create("c", "globex", make_grants("read")).key
        assert [k.id for k in key_store.list()] == [first.id, second.id, other.id]
        assert [k.id for k in key_store.list("acme")] == [first.id, second.id]
        revoked = key_store.revoke(first.prefix)
        assert revoked.id == first.id and revoked.revoked_at
        assert [k.id for k in key_store.list("acme")] == [second.id]
        assert [k.id for k in key_store.list("acme", include_revoked=True)] == [first.id, second.id]
        with pytest.raises(ApiKeyNotFoundError):
            key_store.revoke(first.id)  # already revoked
        with pytest.raises(ApiKeyNotFoundError):
            key_store.revoke("nope")

    def test_revoked_keys_stop_working(self, key_store: KeyStore) -> None:
        created = key_store.create("a", "acme", make_grants("read"))
        key_store.revoke(created.key.id)
        assert key_store.authenticate(created.secret) is None

    @pytest.mark.parametrize("tenant", ["", "Acme", "a b", "../x"])
    def test_bad_tenants_are_refused(self, key_store: KeyStore, tenant: str) -> None:
        with pytest.raises(InvalidTenantError):
            key_store.create("x", tenant, make_grants("read"))

    def test_bad_grants_are_refused(self, key_store: KeyStore) -> None:
        with pytest.raises(InvalidGrantError):
            key_store.create("x", "acme", {})
        with pytest.raises(InvalidGrantError):
            make_grants("owner")
