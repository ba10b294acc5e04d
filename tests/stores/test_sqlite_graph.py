"""SQLite specifics of the graph tables: rows orphaned by a delete that bypasses pruning."""

from __future__ import annotations

import sqlite3

from sourcebook.stores import SQLiteStore
from sourcebook.testing.graph import tidewater_docs


def test_rows_a_bulk_delete_leaves_unpruned_are_invisible(tmp_path) -> None:
    store = SQLiteStore(tmp_path / "kb.db")
    store.ensure_collection("docs", "test-model", 4)
    tidewater_docs(store)
    raw = sqlite3.connect(tmp_path / "kb.db")
    raw.execute("PRAGMA foreign_keys = ON")
    with raw:  # what a bulk delete that knows nothing of the graph does
        raw.execute("DELETE FROM chunks WHERE document_id = 'd2'")
    assert raw.execute("SELECT count(*) FROM graph_nodes WHERE key = 'aws'").fetchone()[0] == 1  # left behind
    raw.close()
    assert "aws" not in {e.key for e in store.list_entities()} and store.find_entities(["aws"]) == {}
    assert store.entity_relations(["aws"]) == []
    assert store.graph_stats()["entities"] == 3 and store.graph_stats()["relations"] == 2
    store.close()
