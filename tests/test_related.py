"""Related content over a real SQLite knowledge base and the real embedding model: more like this
for a document or a chunk (never itself, within collections and the tenant), and what an answer
retrieved but did not cite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sourcebook import KnowledgeBase
from sourcebook.cli import app
from sourcebook.errors import ChunkNotFoundError

DOCS = {
    ("hr", "leave.md"): "# Annual leave\n\nFull-time employees get 27 days of annual leave per year. "
                        "Leave requests go to your manager two weeks ahead.\n",
    ("hr", "holidays.md"): "# Holidays\n\nStaff take paid holidays of 27 days a year plus bank holidays. "
                           "Unused holiday days carry over until March.\n",
    ("hr", "parental.md"): "# Parental leave\n\nParents get 26 weeks of parental leave at full pay. "
                           "Leave can start two weeks before the due date.\n",
    ("eng", "vacation-rota.md"): "# On-call vacations\n\nEngineers on holiday leave are taken off the on-call rota. "
                                 "Annual leave of on-call staff is planned a month ahead.\n",
    ("eng", "deploys.md"): "# Deploys\n\nDeploys run through the pipeline after review. Rollbacks use the previous image.\n",
}


@pytest.fixture(scope="module")
def related_kb(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("related")
    kb = KnowledgeBase.open(folder / "kb.db")
    ids = {}
    for (collection, name), text in DOCS.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        (result,) = kb.add(str(path), collection)
        ids[name] = result.document_id
    other = kb.for_tenant("acme")
    copy = folder / "acme-leave.md"
    copy.write_text(DOCS[("hr", "leave.md")], encoding="utf-8")
    other.add(str(copy), "hr")
    yield kb, ids, folder
    kb.close()


def test_related_documents_leave_the_document_out_and_rank_by_likeness(related_kb):
    kb, ids, _ = related_kb
    found = kb.related(ids["leave.md"], top_k=10)
    names = [Path(d.source).name for d in found]
    assert "leave.md" not in names and len(names) == 4  # every other document of the tenant, acme's copy never
    assert set(names[:2]) == {"holidays.md", "parental.md"} and names[-1] == "deploys.md"  # leave before deploys
    assert [d.score for d in found] == sorted((d.score for d in found), reverse=True)
    assert all(d.chunk_id.startswith(d.document_id) for d in found)
    assert len(kb.related(ids["leave.md"], top_k=2)) == 2


def test_related_documents_stay_within_the_collections_asked_for(related_kb):
    kb, ids, _ = related_kb
    eng = kb.related(ids["leave.md"], collections=["eng"])
    assert {d.collection for d in eng} == {"eng"} and {Path(d.source).name for d in eng} == {"vacation-rota.md", "deploys.md"}
    assert kb.related(ids["leave.md"], collections=[]) == []


def test_another_tenant_sees_only_its_own_documents(related_kb):
    kb, ids, _ = related_kb
    acme = kb.for_tenant("acme")
    (mine,) = acme.documents()
    assert acme.related(mine.id) == []  # the default tenant's documents are never offered


def test_related_to_a_chunk_leaves_its_document_out(related_kb):
    kb, ids, _ = related_kb
    chunk = kb.chunks(ids["parental.md"])[0]
    found = kb.related_to_chunk(chunk.id, top_k=3)
    assert found and all(d.document_id != ids["parental.md"] for d in found)
    with pytest.raises(ChunkNotFoundError):
        kb.related_to_chunk("nope#0")


def test_an_answer_suggests_retrieved_documents_it_did_not_cite(related_kb):
    kb, ids, _ = related_kb
    answer = kb.ask("How many days of annual leave do full-time employees get?", collection="hr")
    assert not answer.abstained
    cited = {c.document_id for c in answer.citations}
    assert answer.related and all(r.document_id not in cited for r in answer.related)
    assert {r.collection for r in answer.related} == {"hr"}
    data = answer.to_dict()
    assert data["related"][0].keys() >= {"document_id", "source", "title", "score"}
    unanswerable = kb.ask("Which company provides the employee pension scheme?")
    assert unanswerable.abstained and unanswerable.related == ()


def test_cli_related_json_contract_and_human_output(related_kb):
    kb, ids, folder = related_kb
    runner = CliRunner()
    result = runner.invoke(app, ["--db", kb.settings.db, "related", str(folder / "leave.md"), "--json", "--in", "hr"])
    assert result.exit_code == 0, result.output
    documents = json.loads(result.stdout)["documents"]
    assert {Path(d["source"]).name for d in documents} == {"holidays.md", "parental.md"}
    assert documents[0].keys() >= {"document_id", "source", "title", "score"}
    chunk = kb.chunks(ids["deploys.md"])[0].id
    human = runner.invoke(app, ["--db", kb.settings.db, "related", "--chunk", chunk])
    assert human.exit_code == 0 and "deploys.md" not in human.stdout and "score" in human.stdout
    assert runner.invoke(app, ["--db", kb.settings.db, "related"]).exit_code == 2


def test_related_and_summaries_on_postgres(migrated_postgres_dsn: str, tmp_path: Path) -> None:
    """The same public store methods on Postgres: itself left out, collections and tenants kept
    (row-level security underneath), the summary cached in the database."""
    with KnowledgeBase.open(migrated_postgres_dsn) as kb:
        ids = {}
        for (collection, name), text in DOCS.items():
            path = tmp_path / name
            path.write_text(text, encoding="utf-8")
            ids[name] = kb.add(str(path), collection)[0].document_id
        kb.for_tenant("acme").add(str(tmp_path / "holidays.md"), "hr")
        found = kb.related(ids["leave.md"], top_k=10)
        assert len(found) == 4 and ids["leave.md"] not in {d.document_id for d in found}
        assert {d.collection for d in kb.related(ids["leave.md"], collections=["eng"])} == {"eng"}
        assert kb.for_tenant("acme").related(kb.for_tenant("acme").documents()[0].id) == []
        summary = kb.summarize(ids["leave.md"])
        assert "27 days" in summary.summary and not summary.cached and kb.summarize(ids["leave.md"]).cached
        assert not kb.for_tenant("acme").summarize(kb.for_tenant("acme").documents()[0].id).cached
