"""The SummaryCache role: summaries by subject and summarizer, valid for one content hash,
dropped by `compact` once their document or collection is gone, never seen by another tenant."""

from __future__ import annotations

from sourcebook.stores import Store

from .helpers import StoreFixtures, add_document

SUMMARY = {"summary": "Leave is 27 days [1].", "citations": [{"n": 1, "quote": "Leave is 27 days."}]}


class SummaryCacheSuite(StoreFixtures):
    """The SummaryCache contract: subclass it and override `empty_store` (see sourcebook.testing)."""

    def test_a_summary_is_kept_per_subject_and_summarizer(self, empty_store: Store) -> None:
        assert empty_store.get_summary("doc-1", "h1", "extractive") is None
        empty_store.put_summary("doc-1", "h1", "extractive", SUMMARY)
        empty_store.put_summary("doc-1", "h1", "anthropic:x", {"summary": "Other words."})
        assert empty_store.get_summary("doc-1", "h1", "extractive") == SUMMARY
        assert empty_store.get_summary("doc-1", "h1", "anthropic:x") == {"summary": "Other words."}
        assert empty_store.get_summary("doc-2", "h1", "extractive") is None

    def test_changed_content_misses_and_the_new_summary_replaces_the_stale_one(self, empty_store: Store) -> None:
        empty_store.put_summary("doc-1", "h1", "extractive", SUMMARY)
        assert empty_store.get_summary("doc-1", "h2", "extractive") is None
        empty_store.put_summary("doc-1", "h2", "extractive", {"summary": "New."})
        assert empty_store.get_summary("doc-1", "h2", "extractive") == {"summary": "New."}
        assert empty_store.get_summary("doc-1", "h1", "extractive") is None

    def test_compact_drops_summaries_of_what_is_gone(self, store: Store) -> None:
        add_document(store, "kept", ["Leave is 27 days."])
        add_document(store, "gone", ["Travel is booked online."])
        for subject in ("kept", "gone", "collection:docs", "collection:removed"):
            store.put_summary(subject, "h", "extractive", SUMMARY)
        store.delete_document("gone")
        assert store.compact()["summaries"] == 2
        assert store.get_summary("kept", "h", "extractive") == SUMMARY
        assert store.get_summary("collection:docs", "h", "extractive") == SUMMARY
        assert store.get_summary("gone", "h", "extractive") is None
        assert store.get_summary("collection:removed", "h", "extractive") is None

    def test_another_tenant_sees_no_summary(self, store: Store) -> None:
        add_document(store, "kept", ["Leave is 27 days."])
        store.put_summary("kept", "h", "extractive", SUMMARY)
        other = store.for_tenant("acme")
        assert other.get_summary("kept", "h", "extractive") is None
        other.put_summary("kept", "h", "extractive", {"summary": "Acme's."})
        assert other.compact()["summaries"] == 1  # acme has no document "kept"
        assert store.get_summary("kept", "h", "extractive") == SUMMARY
