"""API-key records: what a key's grants allow, apart from any store that keeps keys (the
stores' side is `sourcebook.testing.KeyStoreSuite`)."""

from __future__ import annotations

from sourcebook.apikeys import ALL_COLLECTIONS, ApiKey, Role, make_grants


def test_roles_are_ordered_and_scoped() -> None:
    key = make_grants("write", ("docs",)) | {"wiki": Role.READ}
    record = ApiKey("id", "sb_", "n", "acme", key, "now")
    assert record.allows(Role.READ, "docs") and record.allows(Role.WRITE, "docs")
    assert not record.allows(Role.ADMIN, "docs")
    assert record.allows(Role.READ, "wiki") and not record.allows(Role.WRITE, "wiki")
    assert not record.allows(Role.READ, "other") and not record.allows(Role.READ, None)
    assert record.readable() == ("docs", "wiki")
    everywhere = ApiKey("id", "sb_", "n", "acme", {ALL_COLLECTIONS: Role.READ, "docs": Role.ADMIN}, "now")
    assert everywhere.readable() is None and everywhere.allows(Role.READ, "anything")
    assert everywhere.allows(Role.ADMIN, "docs") and not everywhere.allows(Role.WRITE, "other")
