"""`sourcebook add --graph` and the `sourcebook graph` commands, through the typer app."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from sourcebook.cli import app

runner = CliRunner()


def run(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    assert (result.exit_code == 0) == ok, result.output
    return result.stdout


@pytest.fixture(scope="module")
def db(tmp_path_factory, example_docs) -> str:
    folder = tmp_path_factory.mktemp("cli-graph")
    docs = folder / "docs"
    docs.mkdir()
    for name in ("architecture-overview.md", "incident-response-runbook.md"):
        shutil.copy(example_docs / name, docs / name)
    path = str(folder / "kb.db")
    data = json.loads(run("--db", path, "add", str(docs), "--graph", "--json"))
    assert data["summary"] == {"added": 2}
    assert data["graph"]["documents"] == 2 and data["graph"]["graph"]["entities"] > 20
    assert data["graph"]["extractor"] == "offline:1" and data["graph"]["usage"]["calls"] == []
    return path


def test_add_without_graph_builds_none_and_graph_build_does(tmp_path, example_docs) -> None:
    path = str(tmp_path / "kb.db")
    data = json.loads(run("--db", path, "add", str(example_docs / "security-policy.md"), "--json"))
    assert "graph" not in data
    assert "No entities" in run("--db", path, "graph", "list")
    built = json.loads(run("--db", path, "graph", "build", "--json"))
    assert built["documents"] == 1 and built["extracted"] > 0
    again = json.loads(run("--db", path, "graph", "build", "--json"))
    assert (again["documents"], again["up_to_date"]) == (0, 1)
    assert "1 documents built" in run("--db", path, "graph", "build", "--force")


def test_list_and_search_entities(db: str) -> None:
    listed = json.loads(run("--db", db, "graph", "list", "--limit", "5", "--json"))
    mentions = [e["mentions"] for e in listed["entities"]]
    assert len(mentions) == 5 and mentions == sorted(mentions, reverse=True)
    found = json.loads(run("--db", db, "graph", "search", "tidewater", "--json"))["entities"]
    assert [e["name"] for e in found] == ["Tidewater"] and found[0]["documents"] == 2
    assert "Tidewater" in run("--db", db, "graph", "search", "tide")
    codes = json.loads(run("--db", db, "graph", "list", "--type", "code", "--json"))["entities"]
    assert codes and all(e["type"] == "code" for e in codes)


def test_show_an_entity_with_neighbours_and_passages(db: str) -> None:
    view = json.loads(run("--db", db, "graph", "show", "harbor-db", "--json"))
    assert view["entity"]["name"] == "harbor-db" and view["passages"]
    assert view["neighbours"] and all(n["passages"] for n in view["neighbours"])
    text = run("--db", db, "graph", "show", "DCP")
    assert "Data Collection Pipeline (also dcp)" in text and "Neighbours" in text


def test_unknown_entity_is_a_json_error(db: str) -> None:
    error = json.loads(run("--db", db, "graph", "show", "Zanzibar", "--json", ok=False))["error"]
    assert error["code"] == "entity_not_found" and "Zanzibar" in error["message"]


def test_export_json_and_graphml(db: str, tmp_path) -> None:
    graph = json.loads(run("--db", db, "graph", "export"))
    ids = {n["id"] for n in graph["nodes"]}
    assert graph["edges"] and all(e["source"] in ids and e["target"] in ids and e["chunk_ids"] for e in graph["edges"])
    assert all(n["mentions"] > 0 for n in graph["nodes"])
    out = tmp_path / "graph.graphml"
    run("--db", db, "graph", "export", "--format", "graphml", "--output", str(out))
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    root = ET.parse(out).getroot()
    assert len(root.findall(".//g:node", ns)) == len(graph["nodes"])
    assert len(root.findall(".//g:edge", ns)) == len(graph["edges"])
    run("--db", db, "graph", "export", "--format", "dot", ok=False)
    assert json.loads(run("--db", db, "graph", "export", "--json")) == graph  # --json, as every command takes
    error = json.loads(run("--db", db, "graph", "export", "--format", "graphml", "--json", ok=False))["error"]
    assert error["code"] == "usage_error" and "--json" in error["message"]


def test_search_with_the_graph(db: str) -> None:
    hits = json.loads(run("--db", db, "search", "Which topic does Tidewater publish to?", "--mode", "graph", "--json"))["hits"]
    assert hits and any("graph" in h["retrievers"] for h in hits)
    hybrid = json.loads(run("--db", db, "search", "Which topic does Tidewater publish to?", "--graph", "--json"))["hits"]
    assert any("graph" in h["retrievers"] for h in hybrid)
