"""A knowledge base of the example corpus with its offline graph, built once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase


@pytest.fixture(scope="session")
def graph_kb(tmp_path_factory: pytest.TempPathFactory, example_docs: Path) -> Iterator[KnowledgeBase]:
    """Read-only for tests: the example corpus with its graph built by the offline extractor."""
    db = tmp_path_factory.mktemp("graph") / "kb.db"
    with KnowledgeBase.open(db, graph_extractor="offline") as kb:
        kb.add(str(example_docs), graph=True)
        yield kb
