"""The server's watched folders (`ServerSettings.watch`): caught up at startup, kept in sync
while it runs, stopped with it."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.errors import SourceNotFoundError
from sourcebook.server import ServerSettings, create_app

from .conftest import ApiFactory, LiveServer


def _sources(client_documents: list[dict[str, object]]) -> set[str]:
    return {Path(str(d["source"])).name for d in client_documents if d["status"] == "ready"}


def test_a_watched_folder_is_synced_at_startup_and_kept_in_sync(
    make_api: ApiFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sourcebook.watching")
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nParental leave is sixteen weeks.\n")
    api = make_api(auth=False, watch=[f"{folder}:people"])
    with api.client() as client:
        def listed() -> set[str]:
            return _sources(client.get("/v1/documents", params={"collection": "people"}).json()["documents"])

        deadline = time.monotonic() + 30
        while listed() != {"leave.md"}:
            assert time.monotonic() < deadline, "the folder was not synced at startup"
            time.sleep(0.05)
        (folder / "travel.md").write_text("# Travel\n\nBook trains, not flights.\n")
        started = time.monotonic()
        while listed() != {"leave.md", "travel.md"}:
            assert time.monotonic() - started < 2.0, "a new file did not show within 2 s"
            time.sleep(0.05)
    assert [t.name for t in threading.enumerate() if t.name.startswith("sourcebook-watch")] == ["sourcebook-watch-people"]
    changes = [r.getMessage() for r in caplog.records if r.name == "sourcebook.watching"]
    assert changes == [f"watching {folder} into collection people", "added leave.md (1 chunks)", "added travel.md (1 chunks)"]


def test_the_watchers_stop_with_the_server(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    app = create_app(kb, ServerSettings(auth=False, log_json=False, watch=[str(folder)]))
    with LiveServer(app):
        [watching] = [t for t in threading.enumerate() if t.name == "sourcebook-watch-default"]
        assert watching.is_alive()
    assert not watching.is_alive()


def test_watch_entries_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCEBOOK_SERVER_WATCH", "docs, /srv/hr:people,C:/scans")
    assert ServerSettings().watched_folders() == [("docs", "default"), ("/srv/hr", "people"), ("C:/scans", "default")]


def test_a_missing_watched_folder_stops_the_server_from_starting(kb: KnowledgeBase, tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="folder not found"):
        create_app(kb, ServerSettings(auth=False, watch=[str(tmp_path / "nowhere")]))
