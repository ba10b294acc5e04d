"""Shared fixtures: the example corpus and knowledge bases built from it.

Everything is real: a SQLite file in a temp dir and the bundled MiniLM model
(loaded once per test process and cached by `create_embedder`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="session")
def example_docs() -> Path:
    return EXAMPLES / "docs"


@pytest.fixture(scope="session")
def example_kb(tmp_path_factory: pytest.TempPathFactory, example_docs: Path) -> Iterator[KnowledgeBase]:
    """A read-only knowledge base of the example corpus, built once per session."""
    db = tmp_path_factory.mktemp("example") / "kb.db"
    with KnowledgeBase.open(db) as kb:
        results = kb.add(str(example_docs))
        assert all(r.action == "added" for r in results), results
        yield kb


@pytest.fixture
def docs_copy(tmp_path: Path, example_docs: Path) -> Path:
    """A private, writable copy of the example documents."""
    target = tmp_path / "docs"
    shutil.copytree(example_docs, target)
    return target


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with KnowledgeBase.open(tmp_path / "kb.db") as knowledge_base:
        yield knowledge_base
