"""A CLI killed in the middle of `add`: status tells the truth, `status --repair` and `add` finish.

The real executable in a subprocess, killed with SIGKILL (no handler, no cleanup) once some
documents are pending or processing: those read `interrupted` at once (their owner process
is gone), `status --repair` ingests them again, and adding the folder again leaves every
file ready, none twice.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sourcebook

FILES = 300


def sourcebook_command(tmp_path: Path, db: Path, *args: str) -> list[str]:
    exe = shutil.which("sourcebook", path=os.path.dirname(sys.executable))
    assert exe
    return [exe, "--db", str(db), *args]


def environment() -> dict[str, str]:
    """This checkout's package first (the venv's editable install may point at another)."""
    return {**os.environ, "PYTHONPATH": str(Path(sourcebook.__file__).resolve().parents[1])}


def unfinished(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return conn.execute("SELECT count(*) FROM documents WHERE status IN ('pending', 'processing')").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:  # not created or not migrated yet
        return 0


def run_json(command: list[str]) -> dict:
    done = subprocess.run(command, env=environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def big_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(FILES):  # one short chunk each: more than one embedding batch, quick to embed
        (folder / f"note-{n:03}.md").write_text(f"# Note {n}\n\nHarbour log {n} records the tide and the cargo.\n")
    return folder


def test_killed_add_reads_interrupted_then_repair_and_add_finish(tmp_path: Path, big_folder: Path) -> None:
    db = tmp_path / "kb.db"
    adding = subprocess.Popen(
        sourcebook_command(tmp_path, db, "add", str(big_folder), "--json"),
        env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while unfinished(db) == 0:
            assert adding.poll() is None, "add finished before it could be killed: make the folder bigger"
            assert time.monotonic() < deadline, "add never marked a document pending"
            time.sleep(0.05)
        adding.send_signal(signal.SIGKILL)
    finally:
        adding.kill()
        adding.wait()

    listed = run_json(sourcebook_command(tmp_path, db, "list", "--json"))["documents"]
    statuses = {d["status"] for d in listed}
    assert "interrupted" in statuses and not statuses & {"pending", "processing"}
    interrupted = [d for d in listed if d["status"] == "interrupted"]
    assert all("interrupted" in d["error"] for d in interrupted)
    assert run_json(sourcebook_command(tmp_path, db, "status", "--json"))["documents"]["interrupted"] == len(interrupted)

    repaired = run_json(sourcebook_command(tmp_path, db, "status", "--repair", "--json"))
    assert sorted(r["document_id"] for r in repaired["repaired"]) == sorted(d["id"] for d in interrupted)
    assert repaired["documents"]["ready"] == len(listed)
    assert {d["status"] for d in run_json(sourcebook_command(tmp_path, db, "list", "--json"))["documents"]} == {"ready"}

    run_json(sourcebook_command(tmp_path, db, "add", str(big_folder), "--json"))
    final = run_json(sourcebook_command(tmp_path, db, "list", "--json"))["documents"]
    assert len(final) == FILES and {d["status"] for d in final} == {"ready"}
