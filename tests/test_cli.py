"""The CLI and its JSON contract for scripts.

Most tests drive the typer app in-process (the model loads once); one runs the
installed `sourcebook` executable to check the database-path resolution for real.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sourcebook.cli import app

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


HIT_KEYS = {"rank": int, "score": float, "document_id": str, "source": str, "title": str, "chunk_id": str, "text": str, "heading_path": list}


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
