"""Tenancy: no call of one tenant sees or changes a row of another, whatever the retrieval
mode or filter.

Both tenants hold the same collection name, the same sources, the same words and the same
vector directions, so only the tenant can tell their rows apart. Tenancy cuts across every
role, so this suite needs a whole store, and runs a `KnowledgeBase` over it too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sourcebook import KnowledgeBase, Settings
from sourcebook.errors import ChatSessionNotFoundError, DocumentNotFoundError, InvalidTenantError, StoreError
from sourcebook.models import DocumentStatus, SearchFilter
from sourcebook.stores import Store

from .helpers import DIM, MODEL, StoreFixtures, add_document, make_chunks, search, unit

FILTERS = [
    pytest.param(SearchFilter(), id="no-filter"),
    pytest.param(SearchFilter.build("docs", None, None), id="collection"),
    pytest.param(SearchFilter.build(None, None, {"team": "red"}), id="metadata"),
]


class TenancySuite(StoreFixtures):
    """Tenant isolation: subclass it and override `empty_store` (see sourcebook.testing)."""

    @pytest.fixture
    def tenants(self, empty_store: Store) -> tuple[Store, Store]:
        """Two tenants of one database, each with document "<tenant>-doc" plus a shared-looking one."""
        acme, globex = empty_store.for_tenant("acme"), empty_store.for_tenant("globex")
        for tenant in (acme, globex):
            tenant.ensure_collection("docs", MODEL, DIM)
            add_document(tenant, f"{tenant.tenant}-doc", ["shared words here", "more shared words"],
                         metadata={"team": "red"})
        return acme, globex

    @pytest.fixture
    def tenant_kbs(self, empty_store: Store, tmp_path: Path) -> tuple[KnowledgeBase, KnowledgeBase]:
        """Two tenants' knowledge bases over one store, holding the very same files (closing the
        store, which `empty_store` does, closes them)."""
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "leave.md").write_text("# Leave\n\nEmployees get 27 days of paid holiday a year.\n")
        (tmp_path / "docs" / "travel.md").write_text("# Travel\n\nTrain tickets are refunded within 30 days.\n")
        root = KnowledgeBase(empty_store, Settings())
        acme, globex = root.for_tenant("acme"), root.for_tenant("globex")
        for kb in (acme, globex):
            assert all(r.action == "added" for r in kb.add(str(tmp_path / "docs"), metadata={"team": "red"}))
        return acme, globex

    def test_tenants_lists_every_tenant_with_rows(self, store: Store) -> None:
        store.for_tenant("acme").ensure_collection("docs", MODEL, DIM)
        store.for_tenant("globex").create_chat_session("s", "t")
        assert store.tenants() == ["acme", "default", "globex"]

    def test_views_report_their_tenant(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        assert (acme.tenant, globex.tenant) == ("acme", "globex")
        assert acme.for_tenant("globex").tenant == "globex"

    @pytest.mark.parametrize("name", ["", "Acme", "a b", "-lead", "x" * 64, "semi;colon", "quote'"])
    def test_bad_tenant_names_are_refused(self, tenants: tuple[Store, Store], name: str) -> None:
        with pytest.raises(InvalidTenantError):
            tenants[0].for_tenant(name)

    @pytest.mark.parametrize("mode", ["keyword", "vector"])
    @pytest.mark.parametrize("filters", FILTERS)
    def test_searches_return_only_the_tenants_chunks(self, tenants: tuple[Store, Store], mode: str, filters: SearchFilter) -> None:
        for tenant in tenants:
            found = search(tenant, mode, filters)
            assert found, f"{tenant.tenant} found nothing in {mode} mode"
            assert {hit.chunk_id.split("#")[0] for hit in found} == {f"{tenant.tenant}-doc"}

    def test_term_statistics_count_only_the_tenants_chunks(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        add_document(acme, "acme-extra", ["an aardvark"])
        assert (acme.term_statistics("aardvark words").chunks, acme.term_statistics("aardvark words").frequencies) == (
            3, {"aardvark": 1, "word": 2})
        assert (globex.term_statistics("aardvark words").chunks, globex.term_statistics("aardvark words").frequencies) == (
            2, {"aardvark": 0, "word": 2})

    @pytest.mark.parametrize("mode", ["keyword", "vector"])
    def test_a_filter_naming_another_tenants_document_finds_nothing(self, tenants: tuple[Store, Store], mode: str) -> None:
        acme, _ = tenants
        assert search(acme, mode, SearchFilter.build(None, ["globex-doc"], None)) == []

    def test_documents_chunks_and_collections_are_per_tenant(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        assert [d.id for d in acme.list_documents()] == ["acme-doc"]
        assert acme.get_document("globex-doc") is None
        assert acme.find_document("docs", "globex-doc.txt") is None
        assert acme.get_chunks(["globex-doc#0", "acme-doc#0"]).keys() == {"acme-doc#0"}
        assert acme.document_chunks("globex-doc") == []
        assert [(c.name, c.document_count) for c in acme.collections()] == [("docs", 1)]
        assert acme.stats()["chunks"] == 2
        assert acme.vectors_for_hashes("docs", [c.content_hash for c in make_chunks(["shared words here"])]).keys() == {
            make_chunks(["shared words here"])[0].content_hash
        }
        globex.delete_document("globex-doc")
        assert acme.vectors_for_hashes("docs", [make_chunks(["shared words here"])[0].content_hash])

    def test_no_tenant_can_change_another_tenants_document(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        with pytest.raises(DocumentNotFoundError):
            acme.set_status("globex-doc", DocumentStatus.ERROR, "sabotage")
        with pytest.raises(DocumentNotFoundError):
            acme.delete_document("globex-doc")
        with pytest.raises(DocumentNotFoundError):
            acme.replace_chunks("globex-doc", content_hash="x", title="T", chunks=make_chunks(["evil"]),
                                vectors=np.stack([unit(1.0)]))
        with pytest.raises(StoreError):
            acme.upsert_document("globex-doc", collection="docs", source="elsewhere.txt", title="Mine now",
                                 media_type="text/plain", metadata={}, status=DocumentStatus.PENDING)
        record = globex.get_document("globex-doc")
        assert record is not None and (record.status, record.title, record.chunk_count) == (DocumentStatus.READY, "A title", 2)

    def test_collections_with_one_name_are_separate_per_tenant(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        acme.ensure_collection("wide", MODEL, DIM)
        globex.ensure_collection("wide", "another-model", 8)  # no mismatch: a different tenant's collection
        assert {c.name: c.dimension for c in acme.collections()}["wide"] == DIM
        assert {c.name: c.dimension for c in globex.collections()}["wide"] == 8

    def test_chat_sessions_and_context_cache_are_per_tenant(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        acme.create_chat_session("s1", "Acme's chat")
        globex.create_chat_session("s1", "Globex's chat")  # the same id is free in another tenant
        acme.add_chat_message("s1", "user", "acme secret")
        assert [m.content for m in globex.chat_messages("s1")] == []
        assert [s.title for s in globex.list_chat_sessions()] == ["Globex's chat"]
        globex.delete_chat_session("s1")
        assert [m.content for m in acme.chat_messages("s1")] == ["acme secret"]
        with pytest.raises(ChatSessionNotFoundError):
            globex.add_chat_message("s1", "user", "hello")
        acme.put_chunk_contexts({"h1": "acme context"}, "gen")
        assert globex.get_chunk_contexts(["h1"], "gen") == {}

    def test_deleting_a_collection_leaves_other_tenants_alone(self, tenants: tuple[Store, Store]) -> None:
        acme, globex = tenants
        acme.delete_collection("docs")
        assert acme.collections() == [] and acme.list_documents() == []
        assert [c.name for c in globex.collections()] == ["docs"]
        assert search(globex, "keyword", SearchFilter()) and search(globex, "vector", SearchFilter())
        with pytest.raises(StoreError):
            acme.delete_collection("docs")

    @pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
    def test_knowledge_base_searches_stay_in_their_tenant(self, 
        tenant_kbs: tuple[KnowledgeBase, KnowledgeBase], mode: str
    ) -> None:
        acme, globex = tenant_kbs
        for kb, other in ((acme, globex), (globex, acme)):
            own = {d.id for d in kb.documents()}
            theirs = [d.id for d in other.documents()]
            assert own and not own & set(theirs)
            for filters in ({}, {"collection": "default"}, {"metadata": {"team": "red"}}, {"document_ids": sorted(own)}):
                hits = kb.search("paid holiday days", mode=mode, top_k=10, **filters)
                assert hits, (mode, filters)
                assert {hit.chunk.document_id for hit in hits} <= own, (mode, filters)
            assert kb.search("paid holiday days", mode=mode, document_ids=theirs) == []
