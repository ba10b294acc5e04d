"""`FolderWatcher` on a real folder and a real SQLite knowledge base with the real model: each
kind of change shows in the collection within 2 s, a rename embeds nothing, and a watcher
started after changes catches up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.testing.helpers import heeds_ctrl_c
from sourcebook.watching import FolderChange, FolderWatcher

DEADLINE_SECONDS = 2.0


@contextmanager
def watching(kb: KnowledgeBase, folder: Path) -> Iterator[list[FolderChange]]:
    """A watcher of `folder` in a thread, caught up; yields the changes it reports."""
    changes: list[FolderChange] = []
    watcher = FolderWatcher(kb, str(folder), "notes", changes.append)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert watcher.ready.wait(30), "the watcher never caught up"
        yield changes
    finally:
        stop.set()
        thread.join(10)
        assert not thread.is_alive(), "the watcher did not stop"


def within(deadline: float, condition: Callable[[], bool]) -> float:
    """Seconds until `condition` held, failing after `deadline`."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < deadline, "not within the deadline"
        time.sleep(0.02)
    return time.monotonic() - started


def sources(kb: KnowledgeBase) -> dict[str, str]:
    """File name -> content hash of the collection's ready documents."""
    if not any(c.name == "notes" for c in kb.collections()):
        return {}
    return {os.path.basename(r.source): str(r.content_hash) for r in kb.documents("notes") if r.status == "ready"}


def test_created_changed_renamed_and_deleted_files_each_show_within_two_seconds(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    kb.embedder  # noqa: B018 -- the model loads once, outside the timed changes
    with watching(kb, folder) as changes:
        (folder / "a.md").write_text("Parental leave is sixteen weeks at full pay.\n")
        within(DEADLINE_SECONDS, lambda: "a.md" in sources(kb))
        first_hash = sources(kb)["a.md"]

        (folder / "a.md").write_text("Parental leave is twenty weeks at full pay.\n")
        within(DEADLINE_SECONDS, lambda: sources(kb).get("a.md") not in (None, first_hash))

        (folder / "a.md").rename(folder / "b.md")
        within(DEADLINE_SECONDS, lambda: set(sources(kb)) == {"b.md"})
        assert kb.search("twenty weeks", collection="notes")[0].chunk.source.endswith("b.md")

        (folder / "b.md").unlink()
        within(DEADLINE_SECONDS, lambda: not sources(kb))
    assert [c.line() for c in changes] == [
        "added a.md (1 chunks)", "updated a.md (1 chunks, 1 embedded)", "renamed a.md -> b.md", "removed b.md",
    ]


def test_a_rename_keeps_the_document_and_embeds_nothing(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "untitled.md").write_text("The office closes at six on Fridays.\n")
    kb.add(str(folder), "notes")
    before = kb.documents("notes")[0]
    watcher = FolderWatcher(kb, str(folder), "notes")
    os.rename(folder / "untitled.md", folder / "hours.md")

    changes = watcher.apply([str(folder / "untitled.md"), str(folder / "hours.md")])

    assert [c.line() for c in changes] == ["renamed untitled.md -> hours.md"]
    after = kb.documents("notes")[0]
    assert (after.id, after.content_hash, after.chunk_count) == (before.id, before.content_hash, before.chunk_count)
    assert after.source == str(folder / "hours.md") and after.metadata["path"] == after.source
    assert after.title == "hours"  # the title was the file's name: it follows the rename
    assert kb.add(str(folder / "hours.md"), "notes")[0].action == "unchanged"


def test_an_editors_save_dance_is_one_update_and_temp_files_are_ignored(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("Version one of the note.\n")
    kb.add(str(folder), "notes")
    watcher = FolderWatcher(kb, str(folder), "notes")
    # vim's way: move the original to a backup, write the new text, drop the backup; plus a swap file
    os.rename(folder / "a.md", folder / "a.md~")
    (folder / ".a.md.swp").write_text("swap")
    (folder / "a.md").write_text("Version two of the note.\n")
    os.unlink(folder / "a.md~")

    changes = watcher.apply([str(folder / name) for name in ("a.md", "a.md~", ".a.md.swp", "4913")])

    assert [c.action for c in changes] == ["updated"]
    assert [os.path.basename(r.source) for r in kb.documents("notes")] == ["a.md"]


def test_a_moved_folder_moves_its_documents_and_a_bad_file_fails_alone(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    (folder / "old").mkdir(parents=True)
    (folder / "old" / "x.md").write_text("Expenses are reimbursed within thirty days.\n")
    kb.add(str(folder), "notes")
    watcher = FolderWatcher(kb, str(folder), "notes")
    os.rename(folder / "old", folder / "new")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")

    changes = watcher.apply([str(folder / "old"), str(folder / "new"), str(folder / "broken.pdf")])

    lines = sorted(c.line() for c in changes)
    assert lines[1:] == [f"renamed old{os.sep}x.md -> new{os.sep}x.md"]
    assert lines[0].startswith("failed broken.pdf: ") and "/" not in lines[0].split(": ", 1)[1][:1]
    assert sorted(os.path.basename(os.path.dirname(r.source)) for r in kb.documents("notes", status="ready")) == ["new"]


def test_changes_made_while_no_watcher_ran_are_caught_up_at_start(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kept.md").write_text("Kept as it was.\n")
    (folder / "edited.md").write_text("The first text.\n")
    (folder / "deleted.md").write_text("Soon gone.\n")
    (folder / "moved.md").write_text("Moved while the watcher was down.\n")
    kb.add(str(folder), "notes")
    moved_id = kb.document(str(folder / "moved.md")).id
    (folder / "edited.md").write_text("The second text.\n")
    (folder / "deleted.md").unlink()
    (folder / "new.md").write_text("Written while the watcher was down.\n")
    (folder / "moved.md").rename(folder / "arrived.md")

    with watching(kb, folder) as changes:
        caught_up = sorted(c.line() for c in changes)
    assert caught_up == [
        "added new.md (1 chunks)", "removed deleted.md", "renamed moved.md -> arrived.md",
        "updated edited.md (1 chunks, 1 embedded)",
    ]
    assert set(sources(kb)) == {"kept.md", "edited.md", "new.md", "arrived.md"}
    assert kb.document(str(folder / "arrived.md")).id == moved_id


@pytest.mark.parametrize("name", ["a.md", "sub/a.md"])
def test_files_outside_the_patterns_are_not_taken(kb: KnowledgeBase, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    for other in ("image.bin", ".hidden.md", "node_modules/pkg.md"):
        (folder / other).parent.mkdir(exist_ok=True)
        (folder / other).write_text("not a note")
    (folder / name).write_text("A note.\n")
    watcher = FolderWatcher(kb, str(folder), "notes")

    changes = watcher.apply(str(p) for p in folder.rglob("*"))

    assert [c.path for c in changes] == [name.replace("/", os.sep)]


def test_the_watch_command_prints_json_lines_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """`sourcebook watch --json` as a real process: a JSON line per change, Ctrl-C (SIGINT) exits 0."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text("Caught up at start.\n")
    command = [str(Path(sys.executable).with_name("sourcebook")), "--db", str(tmp_path / "kb.db"), "watch", str(folder), "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=heeds_ctrl_c)
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        (folder / "second.md").write_text("Written while watched.\n")
        second = json.loads(process.stdout.readline())
        process.send_signal(signal.SIGINT)
        assert process.wait(20) == 0
    finally:
        process.kill()
    assert (first["action"], first["path"], first["chunks"]) == ("added", "first.md", 1)
    assert (second["action"], second["path"]) == ("added", "second.md")
    assert process.stderr is not None and "Traceback" not in process.stderr.read()
