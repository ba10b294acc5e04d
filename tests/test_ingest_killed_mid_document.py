"""A CLI killed in the middle of one long document: its spooled slices (spool.py) vanish with
the process, and the store still holds the document's old chunks, whole; adding it again
writes the new ones once.

The long version is embedded a slice at a time and its vectors spooled to an unnamed temporary
file; the process is killed with SIGKILL once that file is open (hundreds of chunks embedded,
none written), so the kill lands mid-document.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from .test_cli_interrupted import environment, sourcebook_command

FAST = {"SOURCEBOOK_VECTOR_WINDOWS": "false", "SOURCEBOOK_CHUNK_MAX_TOKENS": "32"}
"""Many small chunks, no window vectors: past the spool's in-memory share in seconds."""


def spooling(pid: int) -> bool:
    """Whether the process holds an unlinked temporary file open (the spool)."""
    folder = Path(f"/proc/{pid}/fd")
    try:
        targets = [os.readlink(fd) for fd in folder.iterdir()]
    except OSError:
        return False
    return any(t.startswith(tempfile.gettempdir()) and t.endswith("(deleted)") for t in targets)


def run_json(command: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def chunk_rows(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT document_id, count(*) FROM chunks GROUP BY document_id").fetchall()


def test_a_kill_mid_document_keeps_the_old_chunks_and_a_new_add_writes_it_once(tmp_path: Path) -> None:
    db, text = tmp_path / "kb.db", tmp_path / "long.txt"
    env = {**environment(), **FAST}
    text.write_text("The old harbour log records the tide.\n\nThe cargo came in late.\n")
    [old] = run_json(sourcebook_command(tmp_path, db, "add", str(text), "--json"), env)["results"]
    text.write_text("\n\n".join(f"Entry {n}: the ferry number {n} left the quay at dawn with grain." for n in range(900)))

    adding = subprocess.Popen(sourcebook_command(tmp_path, db, "add", str(text), "--json"), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not spooling(adding.pid):
            assert adding.poll() is None, "add finished before it could be killed: make the text longer"
            assert time.monotonic() < deadline, "add never spooled"
            time.sleep(0.02)
        adding.send_signal(signal.SIGKILL)
    finally:
        adding.kill()
        adding.wait()

    [listed] = run_json(sourcebook_command(tmp_path, db, "list", "--json"), env)["documents"]
    assert (listed["status"], listed["chunk_count"]) == ("interrupted", old["chunks"])
    assert chunk_rows(db) == [(old["document_id"], old["chunks"])]  # the old chunks, whole, and nothing new

    [again] = run_json(sourcebook_command(tmp_path, db, "add", str(text), "--json"), env)["results"]
    assert (again["action"], again["document_id"]) == ("updated", old["document_id"])
    assert again["chunks"] > 768 and chunk_rows(db) == [(old["document_id"], again["chunks"])]
    [final] = run_json(sourcebook_command(tmp_path, db, "list", "--json"), env)["documents"]
    assert (final["status"], final["chunk_count"]) == ("ready", again["chunks"])
