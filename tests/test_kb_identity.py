"""A file's identity is its resolved path: one folder under any spelling is one set of documents.

Relative and absolute spellings, `./` and `..` noise and symlinks all resolve to the same
path, so `add`, `sync`, `show` and `remove` agree on which document a file is. Knowledge
bases written before (documents stored under the spelling the user typed) are migrated on
open to the resolved path their reader recorded, keeping their ids.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import DocumentNotFoundError
from sourcebook.stores.sqlite import schema as sqlite_schema


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three small notes in tmp_path/corpus, with tmp_path as the working directory."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in (("a.md", "# Alpha\n\nAardvarks dig burrows."), ("b.md", "# Beta\n\nBadgers sleep by day."),
                       ("c.txt", "Cormorants dive for fish.")):
        (folder / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return folder


def actions(results) -> list[str]:
    return sorted(r.action for r in results)


def test_relative_then_absolute_spelling_is_the_same_documents(kb: KnowledgeBase, corpus: Path) -> None:
    assert actions(kb.add("corpus/")) == ["added"] * 3
    assert actions(kb.add(str(corpus.resolve()))) == ["unchanged"] * 3
    assert actions(kb.add("./corpus/../corpus")) == ["unchanged"] * 3
    records = kb.documents()
    assert len(records) == 3
    assert {r.source for r in records} == {str((corpus / name).resolve()) for name in ("a.md", "b.md", "c.txt")}


def test_a_symlink_to_the_folder_or_a_file_is_the_same_documents(kb: KnowledgeBase, corpus: Path, tmp_path: Path) -> None:
    kb.add(str(corpus))
    (tmp_path / "link").symlink_to(corpus, target_is_directory=True)
    (tmp_path / "a-link.md").symlink_to(corpus / "a.md")
    assert actions(kb.add("link")) == ["unchanged"] * 3
    assert actions(kb.add("a-link.md")) == ["unchanged"]
    (corpus / "b.md").write_text("# Beta\n\nBadgers are nocturnal.")
    assert actions(kb.add("link/b.md")) == ["updated"]
    assert len(kb.documents()) == 3


def test_sync_by_another_spelling_removes_vanished_files(kb: KnowledgeBase, corpus: Path, tmp_path: Path) -> None:
    kb.add("corpus")
    (corpus / "c.txt").unlink()
    (tmp_path / "link").symlink_to(corpus, target_is_directory=True)
    results = kb.sync("link")
    assert actions(results) == ["removed", "unchanged", "unchanged"]
    assert sorted(Path(r.source).name for r in kb.documents()) == ["a.md", "b.md"]
    assert actions(kb.sync(str(corpus))) == ["unchanged", "unchanged"]


def test_show_and_remove_by_either_spelling(kb: KnowledgeBase, corpus: Path) -> None:
    kb.add(str(corpus))
    absolute = str((corpus / "a.md").resolve())
    assert kb.document("corpus/a.md").source == absolute
    assert kb.remove("./corpus/a.md").source == absolute
    assert kb.remove(str(corpus / "b.md")).source.endswith("b.md")
    assert [Path(r.source).name for r in kb.documents()] == ["c.txt"]



def test_a_tilde_naming_no_user_is_a_missing_document_not_a_crash(kb: KnowledgeBase) -> None:
    """`~[` names no user: pathlib's expanduser raises RuntimeError, which the API's
    `DELETE /v1/documents/~%5B` answered with a 500 (found by the schema fuzz test)."""
    with pytest.raises(DocumentNotFoundError):
        kb.remove("~[")
    with pytest.raises(DocumentNotFoundError):
        kb.document("~nosuchuser-sourcebook/a.md")

def rewind_to_typed_sources(db: Path, typed: dict[str, str]) -> None:
    """Make `db` a file of the schema before resolved paths, whose documents keep the spelling
    the user typed (source -> typed): what an older Sourcebook wrote."""
    before = next(i for i, m in enumerate(sqlite_schema.MIGRATIONS) if m.name == "file_source_resolved_path")
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for source, spelling in typed.items():
            conn.execute("UPDATE documents SET source = ? WHERE source = ?", (spelling, source))
        conn.execute(f"PRAGMA user_version = {before}")
    finally:
        conn.close()


def test_a_knowledge_base_of_typed_spellings_is_migrated_and_not_doubled(tmp_path: Path, corpus: Path) -> None:
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db) as kb:
        kb.add(str(corpus))
        ids = {Path(r.source).name: r.id for r in kb.documents()}
    resolved = {str((corpus / name).resolve()): f"corpus/{name}" for name in ids}
    rewind_to_typed_sources(db, resolved)
    with KnowledgeBase.open(db) as kb:
        assert actions(kb.add(str(corpus.resolve()))) == ["unchanged"] * 3
        (corpus / "a.md").write_text("# Alpha\n\nAardvarks eat termites.")
        assert actions(kb.add("corpus/a.md")) == ["updated"]
        records = kb.documents()
        assert {Path(r.source).name: r.id for r in records} == ids  # the same documents, ids kept
        assert {r.source for r in records} == set(resolved)
        assert kb.document("corpus/b.md").id == ids["b.md"]


def test_a_folder_stored_twice_before_keeps_both_rows_and_adds_no_third(tmp_path: Path, corpus: Path) -> None:
    """Both spellings of the defect's doubled folder survive the migration (it never deletes
    documents); the absolute one is the document every spelling names from now on."""
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db) as kb:
        kb.add(str(corpus / "a.md"))
    absolute = str((corpus / "a.md").resolve())
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(
        """INSERT INTO documents (id, tenant, collection, source, title, media_type, status, error, chunk_count,
                                  content_hash, metadata, created_at, updated_at)
           SELECT 'legacy', tenant, collection, 'corpus/a.md', title, media_type, status, error, 0, content_hash,
                  metadata, created_at, updated_at FROM documents"""
    )
    conn.close()
    rewind_to_typed_sources(db, {})
    with KnowledgeBase.open(db) as kb:
        assert sorted(r.source for r in kb.documents()) == sorted([absolute, "corpus/a.md"])
        assert actions(kb.add("corpus/a.md")) == ["unchanged"]
        assert len(kb.documents()) == 2
        assert kb.document("corpus/a.md").source == absolute  # the resolved path wins over the typed row
