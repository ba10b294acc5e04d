"""A server killed mid-ingestion: its documents read `interrupted` over the API, and a restart finishes them."""

from __future__ import annotations

import io
from pathlib import Path

import httpx

from sourcebook import KnowledgeBase
from sourcebook.apikeys import make_grants
from sourcebook.models import DocumentStatus
from sourcebook.server import ServerSettings, create_app
from sourcebook.server.app import default_upload_dir
from sourcebook.server.ingestion import UploadStore
from sourcebook.stores import open_store
from sourcebook.stores.sqlite import SQLiteKeyStore
from sourcebook.testing.helpers import ended_process_owner
from tests.server.conftest import LiveServer, wait_ready

NOTE = b"# Lunch\n\nThe canteen serves lentil soup every Wednesday at noon.\n"


def test_an_interrupted_upload_reads_interrupted_and_a_restart_finishes_it(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    with KnowledgeBase.open(db) as kb:
        keys = SQLiteKeyStore(db)
        secret = keys.create("acme", "acme", make_grants("read")).secret
        acme = kb.for_tenant("acme")
        doc_id = acme.enqueue("lunch.md", "notes").id
        UploadStore(default_upload_dir(kb)).save("acme", doc_id, io.BytesIO(NOTE), "note.md", 1 << 20)
        with open_store(db) as store:  # what the killed server's ingestion thread left behind
            store.for_tenant("acme").set_status(doc_id, DocumentStatus.PROCESSING, owner=ended_process_owner())
        record = acme.document(doc_id)
        assert record.status == DocumentStatus.INTERRUPTED and "interrupted" in (record.error or "")
        with LiveServer(create_app(kb, ServerSettings(log_json=False), keys)) as server, \
                httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {secret}"}, timeout=60) as client:
            (document,) = wait_ready(client, [doc_id])
        keys.close()
    assert document["status"] == "ready" and document["chunk_count"] == 1
