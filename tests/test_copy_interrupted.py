"""`copy` of a document whose ingesting process ended: it arrives as an error with its reason."""

from __future__ import annotations

from pathlib import Path

from sourcebook.copying import copy_store
from sourcebook.models import DocumentStatus
from sourcebook.stores.sqlite import SQLiteStore
from sourcebook.testing.helpers import DIM, MODEL, add_document, ended_process_owner


def test_an_interrupted_document_is_copied_as_an_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, SQLiteStore(tmp_path / "b.db") as target:
        source.ensure_collection("docs", MODEL, DIM)
        add_document(source, "done", ["ready text"])
        source.upsert_document("cut", collection="docs", source="cut.txt", title="Cut", media_type="text/plain",
                               metadata={}, status=DocumentStatus.PROCESSING, owner=ended_process_owner())
        copy_store(source, target)
        copied = target.get_document("cut")
        assert copied is not None and copied.status == DocumentStatus.ERROR and "interrupted" in (copied.error or "")
        assert target.get_document("done").status == DocumentStatus.READY  # type: ignore[union-attr]
