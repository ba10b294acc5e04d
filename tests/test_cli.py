"""The CLI and its JSON contract for scripts.

Most tests drive the typer app in-process (the model loads once); one runs the
installed `sourcebook` executable to check the database-path resolution for real.
"""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner, Result

from sourcebook.cli import _common, app
from tests.conftest import EXAMPLES

runner = CliRunner()


def run(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    if ok:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code != 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def db(tmp_path_factory, example_docs) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "kb.db")
    data = json.loads(run("--db", path, "add", str(example_docs), "--json"))
    assert data["summary"] == {"added": 9}
    return path


HIT_KEYS = {"rank": int, "score": float, "document_id": str, "source": str, "title": str, "chunk_id": str, "text": str, "heading_path": list, "location": str}


def check_hit(hit: dict) -> None:
    for key, kind in HIT_KEYS.items():
        assert isinstance(hit[key], kind), key
    assert hit["page"] is None or isinstance(hit["page"], int)


def test_search_json_contract(db, example_docs):
    data = json.loads(run("--db", db, "search", "parental leave at full pay", "--top-k", "10", "--json"))
    assert data["query"] == "parental leave at full pay"
    assert 1 <= len(data["hits"]) <= 10
    for hit in data["hits"]:
        check_hit(hit)
    assert data["hits"][0]["source"] == os.path.normpath(str(example_docs / "employee-handbook.md"))
    assert [h["rank"] for h in data["hits"]] == list(range(1, len(data["hits"]) + 1))


def test_search_queries_file_prints_one_line_per_query(db, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "a", "text": "database failover"}\n{"_id": "b", "text": "per diem UK"}\n')
    lines = run("--db", db, "search", "--queries-file", str(queries), "--top-k", "3", "--json").splitlines()
    parsed = [json.loads(line) for line in lines]
    assert [p["query_id"] for p in parsed] == ["a", "b"]
    for p in parsed:
        assert 1 <= len(p["hits"]) <= 3
        for hit in p["hits"]:
            check_hit(hit)


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_search_modes(db, mode):
    data = json.loads(run("--db", db, "search", "PagerDuty rotation", "--mode", mode, "--json"))
    assert "incident-response-runbook.md" in data["hits"][0]["source"]


def test_ask_json_contract(db):
    data = json.loads(run("--db", db, "ask", "How many days of annual leave do full-time staff get?", "--json"))
    assert set(data) >= {"question", "answer", "abstained", "citations", "confidence"}
    assert data["abstained"] is False
    assert "27 days" in data["answer"]
    assert 0.0 <= data["confidence"] <= 1.0
    citation = data["citations"][0]
    assert set(citation) >= {"n", "document_id", "source", "chunk_id", "quote"}
    assert f"[{citation['n']}]" in data["answer"]
    assert citation["quote"] in data["answer"]


def test_ask_abstains_on_unrelated_question(db):
    data = json.loads(run("--db", db, "ask", "What is the boiling point of liquid nitrogen on Jupiter?", "--json"))
    assert data["abstained"] is True
    assert data["citations"] == []


def test_ask_human_output_lists_numbered_sources(db):
    output = run("--db", db, "ask", "What is the per diem for meals on UK business trips?")
    assert "[1]" in output and "Sources" in output and "travel-policy.pdf" in output
    # each source names its place: the PDF's page
    assert re.search(r"^\[\d\] Northwind Labs Travel and Expenses Policy · .*page \d — .*travel-policy\.pdf$", output, re.M)


def test_list_show_status_and_remove(db, tmp_path):
    own = str(tmp_path / "own.db")
    shutil.copy(db, own)
    documents = json.loads(run("--db", own, "list", "--json"))["documents"]
    assert len(documents) == 9 and all(d["status"] == "ready" for d in documents)
    target = documents[0]
    shown = json.loads(run("--db", own, "show", target["id"], "--json"))
    assert shown["document"]["id"] == target["id"]
    assert len(shown["chunks"]) == target["chunk_count"]
    status = json.loads(run("--db", own, "status", "--json"))
    assert status["documents"]["ready"] == 9
    removed = json.loads(run("--db", own, "remove", target["source"], "--json"))
    assert removed["removed"]["id"] == target["id"]
    assert len(json.loads(run("--db", own, "list", "--json"))["documents"]) == 8
    error = json.loads(run("--db", own, "show", target["id"], "--json", ok=False))
    assert error["error"]["code"] == "document_not_found"


def test_add_reports_failures_per_file_and_exits_nonzero(tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nThe canteen opens at eight.\n")
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    data = json.loads(run("--db", str(tmp_path / "kb.db"), "add", str(tmp_path), "--json", ok=False))
    by_name = {Path(r["source"]).name: r for r in data["results"]}
    assert by_name["good.md"]["action"] == "added"
    for name in ("empty.txt", "bad.pdf"):
        assert by_name[name]["action"] == "failed"
        assert name in by_name[name]["error"]


def test_add_profile_prints_every_stage(tmp_path, example_docs):
    """`add --profile` says where the time went: a table on stderr, or the figures in --json."""
    shown = runner.invoke(app, ["--db", str(tmp_path / "a.db"), "add", str(example_docs / "employee-handbook.md"), "--profile"])
    assert shown.exit_code == 0, shown.output
    for stage in ("load", "chunk", "tokenize", "model", "write", "open (model load)", "padding"):
        assert stage in shown.stderr
    data = json.loads(run("--db", str(tmp_path / "b.db"), "add", str(example_docs), "--profile", "--json"))
    profile = data["profile"]
    assert set(profile["seconds"]) == {"load", "chunk", "tokenize", "model", "write"}
    assert profile["seconds"]["model"] > 0 and profile["add_seconds"] > 0
    assert profile["counts"]["padded_tokens"] >= profile["counts"]["tokens"] > 0
    assert "profile" not in json.loads(run("--db", str(tmp_path / "b.db"), "add", str(example_docs), "--json"))


def test_add_of_a_missing_file_fails_and_stores_nothing(tmp_path):
    """A typo in a path must not leave a permanent error document behind."""
    db = str(tmp_path / "kb.db")
    missing = str(tmp_path / "nonexistent" / "file.md")
    added = invoke("--db", db, "add", missing, "--json")
    assert added.exit_code == 1, added.output
    [result] = json.loads(added.stdout)["results"]
    assert (result["action"], result["error_code"], result["document_id"]) == ("failed", "loader_error", None)
    assert "file not found" in result["error"]
    assert json.loads(run("--db", db, "list", "--json"))["documents"] == []


def test_sync_json(tmp_path, docs_copy):
    db = str(tmp_path / "kb.db")
    first = json.loads(run("--db", db, "sync", str(docs_copy), "--json"))
    assert first["summary"] == {"added": 9}
    (docs_copy / "product-faq.html").unlink()
    second = json.loads(run("--db", db, "sync", str(docs_copy), "--json"))
    assert second["summary"] == {"unchanged": 8, "removed": 1}


def test_db_path_from_environment_then_default(tmp_path, example_docs):
    """The real executable: --db, else SOURCEBOOK_DB, else ./sourcebook.db."""
    exe = shutil.which("sourcebook", path=os.path.dirname(sys.executable))
    assert exe
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe office plants are watered on Fridays.\n")
    env = {**os.environ, "SOURCEBOOK_DB": str(tmp_path / "from-env.db")}
    subprocess.run([exe, "add", str(note), "--json"], check=True, env=env, cwd=tmp_path, capture_output=True)
    assert (tmp_path / "from-env.db").exists()
    del env["SOURCEBOOK_DB"]
    subprocess.run([exe, "add", str(note), "--json"], check=True, env=env, cwd=tmp_path, capture_output=True)
    assert (tmp_path / "sourcebook.db").exists()
    out = subprocess.run([exe, "search", "plants watered", "--json"], check=True, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert json.loads(out.stdout)["hits"][0]["source"] == str(note)


def test_tenant_option_scopes_every_command(db, tmp_path):
    own = str(tmp_path / "own.db")
    shutil.copy(db, own)
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe office plants are watered on Fridays.\n")
    run("--db", own, "--tenant", "acme", "add", str(note), "--json")
    acme_hits = json.loads(run("--db", own, "--tenant", "acme", "search", "plants watered", "--json"))["hits"]
    assert {h["source"] for h in acme_hits} == {str(note)}
    default_hits = json.loads(run("--db", own, "search", "plants watered", "--json"))["hits"]
    assert str(note) not in {h["source"] for h in default_hits}
    assert len(json.loads(run("--db", own, "--tenant", "acme", "list", "--json"))["documents"]) == 1
    error = json.loads(run("--db", own, "--tenant", "Not Valid", "list", "--json", ok=False))
    assert error["error"]["code"] == "invalid_tenant"


# ---- settings, errors, version and help (cli/_common.py, cli/__init__.py) ----------------------


def invoke(*args: str) -> Result:
    return runner.invoke(app, list(args))


def one_line_error(result: Result) -> str:
    """The error a failed command printed: exactly one line on stderr, no traceback."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def json_error(result: Result, code: str, status: int = 1) -> str:
    assert result.exit_code == status, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == code and set(error) == {"code", "message"}
    return error["message"]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with no settings file or SOURCEBOOK_* variables but the ones a test sets."""
    for name in list(os.environ):
        if name.upper().startswith("SOURCEBOOK_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_settings_file_names_the_database(workdir: Path) -> None:
    """`db = "custom.db"` in sourcebook.toml means the same to the CLI as to KnowledgeBase.open()."""
    (workdir / "sourcebook.toml").write_text('db = "custom.db"\ntop_k = 1\n')
    note = workdir / "note.md"
    note.write_text("# Note\n\nThe office plants are watered on Fridays.\n")
    assert json.loads(run("add", str(note), "--json"))["summary"] == {"added": 1}
    assert (workdir / "custom.db").exists() and not (workdir / "sourcebook.db").exists()
    hits = json.loads(run("search", "plants watered", "--json"))["hits"]
    assert [h["source"] for h in hits] == [str(note)]  # top_k = 1 from the file too
    run("--db", str(workdir / "other.db"), "add", str(note))  # --db overrides the file
    assert (workdir / "other.db").exists()


@pytest.mark.parametrize("where", ["file", "environment"])
def test_a_bad_setting_is_a_one_line_error(workdir: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    if where == "file":
        (workdir / "sourcebook.toml").write_text('top_k = "three"\n')
        origin = "sourcebook.toml"
    else:
        monkeypatch.setenv("SOURCEBOOK_TOP_K", "three")
        origin = "$SOURCEBOOK_TOP_K"
    line = one_line_error(invoke("search", "anything"))
    assert "top_k" in line and "'three'" in line and origin in line and "integer" in line
    message = json_error(invoke("search", "anything", "--json"), "invalid_settings")
    assert "top_k" in message and origin in message


def test_a_broken_settings_file_is_a_one_line_error(workdir: Path) -> None:
    (workdir / "sourcebook.toml").write_text("top_k = [\n")
    assert "sourcebook.toml is not valid TOML" in one_line_error(invoke("status"))
    assert "sourcebook.toml" in json_error(invoke("status", "--json"), "invalid_settings")


def test_bad_options_are_one_line_usage_errors(db: str) -> None:
    bad_status = invoke("--db", db, "list", "--status", "bogus")
    assert bad_status.exit_code == 2
    line = one_line_error(bad_status)
    assert "--status" in line and "'bogus'" in line and "list --help" in line
    assert "bogus" in json_error(invoke("--db", db, "list", "--status", "bogus", "--json"), "usage_error", 2)
    assert "Missing argument" in one_line_error(invoke("--db", db, "ask"))
    assert "Missing argument" in json_error(invoke("--db", db, "ask", "--json"), "usage_error", 2)
    assert "No such command" in one_line_error(invoke("lst"))
    assert "--per-document" in json_error(
        invoke("--db", db, "search", "x", "--per-document", "many", "--json"), "usage_error", 2)


def test_files_that_cannot_be_read_or_written_are_one_line_errors(db: str, tmp_path: Path) -> None:
    missing = one_line_error(invoke("--db", db, "search", "--queries-file", str(tmp_path / "nope.jsonl")))
    assert "--queries-file" in missing and "does not exist" in missing
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"_id": "a", "text": "leave"}\n\n{"_id": "b"}\n')
    assert f"{queries} line 3" in one_line_error(invoke("--db", db, "search", "--queries-file", str(queries)))
    queries.write_text('{"_id": "a", "text": "leave"}\nnot json\n')
    assert f"{queries} line 2" in json_error(
        invoke("--db", db, "search", "--queries-file", str(queries), "--json"), "configuration_error")
    unwritable = tmp_path / "no-such-folder" / "graph.json"
    line = one_line_error(invoke("--db", db, "graph", "export", "--output", str(unwritable)))
    assert line == f"error: {unwritable}: No such file or directory"
    taken = tmp_path / "taken"
    taken.write_text("a file, not a folder")
    assert str(taken) in json_error(invoke("--db", str(taken / "kb.db"), "add", str(queries), "--json"), "os_error")


READ_COMMANDS = [
    ["search", "leave"], ["ask", "How long is parental leave?"], ["list"], ["show", "doc"], ["status"],
    ["remove", "doc"], ["chat", "--list"], ["graph", "build"], ["graph", "list"], ["graph", "search", "x"],
    ["graph", "show", "x"], ["graph", "export"], ["keys", "list"], ["keys", "revoke", "sb_x"],
    ["eval", "answers", str(EXAMPLES / "questions.jsonl")], ["summarize", "doc"], ["related", "doc"], ["refresh"],
    ["compact"], ["usage"],
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda command: " ".join(command[:2]))
def test_reading_a_missing_database_is_an_error(workdir: Path, command: list[str]) -> None:
    line = one_line_error(invoke("--db", "typo.db", *command))
    assert "no knowledge base at typo.db (--db)" in line and "sourcebook add" in line
    message = json_error(invoke("--db", "sqlite:///typo.db", *command, "--json"), "database_not_found")
    assert "typo.db" in message
    assert not (workdir / "typo.db").exists()


def test_a_missing_database_named_by_the_environment_or_file(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "sourcebook.toml").write_text('db = "from-file.db"\n')
    assert "no knowledge base at from-file.db (sourcebook.toml)" in one_line_error(invoke("graph", "export"))
    monkeypatch.setenv("SOURCEBOOK_DB", "gone.db")
    assert "no knowledge base at gone.db ($SOURCEBOOK_DB)" in one_line_error(invoke("search", "x"))
    assert not (workdir / "gone.db").exists() and not (workdir / "from-file.db").exists()


def test_an_error_of_several_lines_prints_as_one(workdir: Path) -> None:
    """psycopg's "connection refused" carries a hint on a second line."""
    pytest.importorskip("psycopg")
    line = one_line_error(invoke("--db", "postgresql://127.0.0.1:1/kb", "list"))
    assert "cannot open Postgres store" in line and "Is the server running" in line
    message = json_error(invoke("--db", "postgresql://127.0.0.1:1/kb", "list", "--json"), "store_error")
    assert "Is the server running" in message


def test_a_command_names_the_extra_it_needs(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base install has no server, mcp or postgres packages (tests/test_base_install.py runs it)."""
    monkeypatch.setitem(_common.EXTRA_MODULES, "server", ("sourcebook_no_such_module",))
    monkeypatch.setitem(_common.EXTRA_MODULES, "postgres", ("sourcebook_no_such_module",))
    line = one_line_error(invoke("--db", db, "serve"))
    assert "`sourcebook serve` needs the 'server' extra" in line and "pip install 'sourcebook[server]'" in line
    message = json_error(invoke("--db", "postgresql://localhost/kb", "list", "--json"), "missing_extra")
    assert "pip install 'sourcebook[postgres]'" in message
    assert "sourcebook[postgres]" in one_line_error(invoke("postgres", "stop"))


def test_version() -> None:
    assert run("--version") == f"sourcebook {version('sourcebook')}\n"


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and command group below `group`, as the words that invoke it."""
    found = []
    for name, command in group.commands.items():
        found.append((*path, name))
        if hasattr(command, "commands"):
            found.extend(_commands(command, (*path, name)))
    return found


def test_every_command_help_shows_examples() -> None:
    """Groups (`graph`, `keys`, `postgres`, ...) too: their help is what `sourcebook keys` prints."""
    commands = _commands(get_command(app))
    assert len(commands) >= 30 and ("keys",) in commands and ("keys", "list") in commands
    for command in commands:
        text = run(*command, "--help")
        shown = [line.strip() for line in text.split("Examples", 1)[-1].splitlines() if line.strip().startswith("$ ")]
        assert shown and all(" ".join(command) in line and "sourcebook" in line for line in shown), (command, shown)


def test_top_level_help_lists_commands_by_group() -> None:
    text = run("--help")
    panels = ["Documents", "Questions", "Knowledge graph", "Evaluation", "Services", "Database"]
    positions = [text.index(f"─ {panel} ") for panel in panels]
    assert positions == sorted(positions)
    assert text.index("│ add ") < text.index("─ Questions") < text.index("│ ask ") < text.index("─ Knowledge graph")


def test_compact_reports_what_it_dropped(tmp_path):
    db = str(tmp_path / "kb.db")
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nQuokkas smile at tourists on Rottnest.\n")
    run("--db", db, "add", str(note))
    run("--db", db, "remove", str(note))
    dropped = json.loads(run("--db", db, "compact", "--json"))
    assert set(dropped) == {
        "graph_extractions", "chunk_contexts", "summaries", "terms", "size_bytes_before", "size_bytes_after"}
    assert dropped["terms"] > 0
    assert "dropped 0 graph extractions" in run("--db", db, "compact")


def test_migrate_reports_the_versions_it_applied(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    first = json.loads(run("--db", db, "migrate", "--json"))
    assert first["applied"] == list(range(1, first["schema_version"] + 1))
    assert json.loads(run("--db", db, "migrate", "--json"))["applied"] == []
    assert run("--db", db, "migrate").endswith("(nothing to apply)\n")


def test_copy_between_sqlite_files_copies_only_what_changed(db: str, tmp_path: Path) -> None:
    target = str(tmp_path / "copy.db")
    first = json.loads(run("copy", db, target, "--json"))
    assert (first["tenants"], first["documents_copied"], first["documents_unchanged"]) == (["default"], 9, 0)
    assert json.loads(run("copy", db, target, "--json"))["documents_unchanged"] == 9
    copied = json.loads(run("--db", target, "search", "paid holiday", "--json"))["hits"]
    assert copied == json.loads(run("--db", db, "search", "paid holiday", "--json"))["hits"]
    line = one_line_error(invoke("copy", str(tmp_path / "typo.db"), target))
    assert "no knowledge base at" in line and "typo.db (SOURCE)" in line


def test_piped_human_output_keeps_a_long_source_path_on_one_line(tmp_path):
    """Scripts grep piped output for paths: rich must not hard-wrap a long one at 80 columns."""
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 4)
    deep.mkdir(parents=True)
    shutil.copy(EXAMPLES / "docs" / "employee-handbook.md", deep / "employee-handbook.md")
    db = str(tmp_path / "kb.db")
    run("--db", db, "add", str(deep))
    output = run("--db", db, "ask", "How many days of annual leave do full-time staff get?")
    assert any(line.endswith(f"— {deep / 'employee-handbook.md'}") for line in output.splitlines())
