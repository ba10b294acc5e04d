"""`sourcebook eval retrieval` on a tiny BEIR dataset and `sourcebook eval answers` on the examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sourcebook import KnowledgeBase
from sourcebook.cli import app
from sourcebook.embedders.local import resolve_precision
from sourcebook.evaluation.retrieval import index_key
from sourcebook.settings import Settings

runner = CliRunner()

TOPICS = [
    ("Sourdough bread", "A sourdough starter is a culture of wild yeast and lactic acid bacteria used to leaven bread."),
    ("Espresso", "Espresso is brewed by forcing hot water through finely ground coffee under about nine bars of pressure."),
    ("Photosynthesis", "Plants convert sunlight, water and carbon dioxide into glucose and oxygen in their chloroplasts."),
    ("Volcanoes", "A volcano erupts when magma from the mantle rises through cracks in the crust and reaches the surface."),
    ("Tides", "Ocean tides are caused mainly by the gravitational pull of the moon on the rotating earth."),
    ("Honeybees", "Honeybees communicate the direction of flowers to their hive mates with a waggle dance."),
    ("Chess openings", "The Sicilian Defence answers the king's pawn opening with a pawn move on the c-file."),
    ("Glaciers", "Glaciers form where snow accumulates over many years and compacts into thick ice that slowly flows."),
    ("Bicycle gears", "Derailleur gears move the chain between sprockets so a cyclist can keep a comfortable cadence."),
    ("Compound interest", "Compound interest adds earned interest to the principal, so future interest grows on both."),
    ("Tea", "Green tea leaves are steamed or pan-fired soon after picking to stop oxidation, unlike black tea."),
    ("Lighthouses", "A lighthouse uses a Fresnel lens to focus its lamp into a beam visible far out at sea."),
    ("Vaccines", "Vaccines train the immune system to recognise a pathogen without causing the disease itself."),
    ("Origami", "Origami is the Japanese art of folding a single sheet of paper into figures without cutting it."),
    ("Rainbows", "A rainbow appears when sunlight is refracted, reflected and dispersed inside raindrops."),
    ("Submarines", "Submarines dive by flooding ballast tanks with sea water and surface by blowing them out with air."),
    ("Penguins", "Emperor penguins breed during the Antarctic winter and the males incubate the single egg on their feet."),
    ("Cheese", "Rennet curdles milk, separating it into solid curds and liquid whey, the first step of cheesemaking."),
    ("Sundials", "A sundial tells the time from the shadow that its gnomon casts on a marked dial."),
    ("Kites", "A kite flies because the wind pushing on its tilted surface creates lift that the line holds against."),
]
QUERIES = {
    "q1": ("how is coffee made under high pressure", {"d1": 2}),
    "q2": ("why does the sea rise and fall twice a day", {"d4": 2}),
    "q3": ("molten rock coming out of a mountain", {"d3": 2, "d7": 1}),
    "q4": ("what makes bread rise without commercial yeast", {"d0": 2}),
    "q5": ("how do bees tell each other where food is", {"d5": 2}),
}


def write_dataset(root: Path, records: list[tuple[str, str]] = TOPICS) -> Path:
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as out:
        for i, (title, text) in enumerate(records):
            out.write(json.dumps({"_id": f"d{i}", "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as out:
        for query_id, (text, _) in QUERIES.items():
            out.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    with open(root / "qrels" / "test.tsv", "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for query_id, (_, judged) in QUERIES.items():
            out.writelines(f"{query_id}\t{doc}\t{gain}\n" for doc, gain in judged.items())
    return root


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("beir") / "tiny")


def test_eval_retrieval_json_and_report(dataset: Path, tmp_path: Path) -> None:
    report = tmp_path / "out" / "retrieval.md"
    data = json.loads(invoke("eval", "retrieval", str(dataset), "--db", str(tmp_path / "idx.db"),
                             "--report", str(report), "--json"))
    assert data["dataset"] == "tiny" and data["split"] == "test"
    assert (data["queries"], data["documents"]) == (5, 20)
    assert data["ingest_actions"] == {"added": 20}
    assert data["ks"] == [10, 100]
    assert [m["mode"] for m in data["modes"]] == ["keyword", "vector", "hybrid"]
    for mode in data["modes"]:
        assert list(mode["metrics"]) == ["ndcg@10", "ndcg@100", "recall@10", "recall@100", "mrr@10", "mrr@100"]
        assert all(0.0 <= v <= 1.0 for v in mode["metrics"].values())
        assert 0 < mode["latency_p50_ms"] <= mode["latency_p95_ms"]
    hybrid = data["modes"][2]["metrics"]
    assert hybrid["recall@100"] == 1.0  # 20 documents: every relevant one is within 100
    assert hybrid["ndcg@10"] > 0.7
    text = report.read_text()
    assert "| mode | nDCG@10 |" in text and "![per-mode figures](retrieval.png)" in text
    assert report.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_eval_retrieval_reuses_and_prunes_the_cached_index(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = ("eval", "retrieval", str(dataset), "--modes", "keyword", "--json")
    first = json.loads(invoke(*args))
    assert first["index"].startswith(str(tmp_path / "cache" / "sourcebook" / "eval" / "tiny-"))
    assert [m["mode"] for m in first["modes"]] == ["keyword"]
    again = json.loads(invoke(*args))
    assert again["index"] == first["index"] and again["ingest_actions"] == {"unchanged": 20}

    write_dataset(dataset, TOPICS[:-1])  # the last record is gone from the corpus
    try:
        pruned = json.loads(invoke(*args))
    finally:
        write_dataset(dataset)
    assert pruned["ingest_actions"] == {"unchanged": 19, "removed": 1}
    assert pruned["documents"] == 19


def test_eval_retrieval_human_output_and_errors(dataset: Path, tmp_path: Path) -> None:
    output = invoke("eval", "retrieval", str(dataset), "--db", str(tmp_path / "idx.db"), "--modes", "keyword,hybrid")
    assert "keyword" in output and "hybrid" in output and "nDCG@10" in output
    bad = runner.invoke(app, ["eval", "retrieval", str(dataset), "--modes", "fuzzy"])
    assert bad.exit_code != 0
    (tmp_path / "empty").mkdir()
    missing = runner.invoke(app, ["eval", "retrieval", str(tmp_path / "empty"), "--db", str(tmp_path / "x.db"), "--json"])
    assert missing.exit_code == 1
    assert json.loads(missing.stdout)["error"]["code"] == "configuration_error"


def test_eval_answers_on_the_examples(example_kb: KnowledgeBase, tmp_path: Path) -> None:
    questions = Path(__file__).resolve().parents[2] / "examples" / "questions.jsonl"
    report = tmp_path / "answers.md"
    args = ("--db", example_kb.settings.db, "eval", "answers", str(questions), "--json", "--report", str(report))
    data = json.loads(invoke(*args))
    assert (data["questions"], data["answerable"], data["unanswerable"], data["k"]) == (25, 20, 5, 5)
    for key in ("answer_hit_rate", "source_recall_at_k", "citation_precision", "abstention_precision",
                "abstention_recall", "ece"):
        assert 0.0 <= data[key] <= 1.0, key
    assert data["source_recall_at_k"] >= 0.9  # the example corpus is small and its gold sources easy to find
    assert len(data["reliability"]) == 10
    assert sum(b["count"] for b in data["reliability"]) == 25
    assert {r["id"] for r in data["results"]} == {f"q{i:02d}" for i in range(1, 26)}
    assert "## Confidence calibration" in report.read_text()
    assert report.with_suffix(".png").read_bytes().startswith(b"\x89PNG")

    few = tmp_path / "few.jsonl"
    few.write_text("".join(questions.read_text().splitlines(keepends=True)[:2]))
    human = invoke("--db", example_kb.settings.db, "eval", "answers", str(few), "--top-k", "3")
    assert "source recall@3" in human and "answer hit rate" in human


def test_eval_answers_split_and_gold_sections(example_kb: KnowledgeBase, tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    rows = [
        {"id": "leave", "question": "How many days of annual leave do full-time employees get?", "answers": ["27 days"],
         "gold_sources": ["employee-handbook.md"], "gold_sections": ["Annual leave"], "split": "dev"},
        {"id": "wrong-section", "question": "How many days of annual leave do full-time employees get?",
         "answers": ["27 days"], "gold_sources": ["employee-handbook.md"], "gold_sections": ["Sick leave"],
         "split": "test"},
        {"id": "none", "question": "What is the CEO's favourite colour?", "answers": [], "split": "test"},
    ]
    qa.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dev = json.loads(invoke("--db", example_kb.settings.db, "eval", "answers", str(qa), "--split", "dev", "--json"))
    assert (dev["split"], dev["questions"]) == ("dev", 1)
    assert (dev["gold_in_top_rate"], dev["cited_gold_rate"], dev["false_abstention_rate"]) == (1.0, 1.0, 0.0)
    test = json.loads(invoke("--db", example_kb.settings.db, "eval", "answers", str(qa), "--split", "test", "--json"))
    assert [r["id"] for r in test["results"]] == ["wrong-section", "none"]
    assert test["cited_gold_rate"] == 0.0  # the right file, cited under another section
    assert test["abstention_recall"] == 1.0
    human = invoke("--db", example_kb.settings.db, "eval", "answers", str(qa), "--split", "dev")
    assert "citation on gold page/section" in human and "false abstention" in human
    bad = runner.invoke(app, ["--db", example_kb.settings.db, "eval", "answers", str(qa), "--split", "train"])
    assert bad.exit_code == 1 and "unknown split 'train'" in bad.output


def test_the_cached_index_is_keyed_by_every_setting_that_changes_vectors(dataset: Path) -> None:
    """int8 and fp32 documents are different vectors, as are other window designs: an evaluation
    at one must never read the cached index built at another."""
    keys = {index_key(dataset, Settings(**change)) for change in (
        {}, {"embedding_precision": "int8"}, {"window_pooling": "separate"}, {"vector_windows": False},
    )}
    assert len(keys) == 4
    # "auto" is the precision it stands for on this machine (bf16 or fp32), not a key of its own
    resolved = resolve_precision("auto")
    assert index_key(dataset, Settings()) == index_key(dataset, Settings(embedding_precision=resolved))
    other = "fp32" if resolved == "bf16" else "bf16"
    assert index_key(dataset, Settings()) != index_key(dataset, Settings(embedding_precision=other))
