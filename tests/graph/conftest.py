"""A knowledge base of the example corpus with its offline graph, built once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.stores import open_store
from sourcebook.stores.base import Store


@pytest.fixture(scope="session")
def graph_kb(tmp_path_factory: pytest.TempPathFactory, example_docs: Path) -> Iterator[KnowledgeBase]:
    """Read-only for tests: the example corpus with its graph built by the offline extractor."""
    db = tmp_path_factory.mktemp("graph") / "kb.db"
    with KnowledgeBase.open(db, graph_extractor="offline") as kb:
        kb.add(str(example_docs), graph=True)
        yield kb


@pytest.fixture(scope="session")
def graph_store(graph_kb: KnowledgeBase) -> Iterator[Store]:
    """The database file of `graph_kb` opened directly, for the graph's store-level functions."""
    with open_store(graph_kb.settings.db) as store:
        yield store
