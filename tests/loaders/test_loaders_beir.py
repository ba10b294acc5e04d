"""BEIR corpus reading."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sourcebook.errors import LoaderError
from sourcebook.loaders import count_beir, iter_beir

SCIFACT = "/work/shared/eval/scifact/corpus.jsonl"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _record(**fields: object) -> str:
    return json.dumps(fields)


def test_documents_from_records(tmp_path: Path) -> None:
    corpus = _write(
        tmp_path / "corpus.jsonl",
        [
            _record(
                _id="d1", title="Vitamin D", text="First paragraph.\n\nSecond  paragraph.", metadata={"year": 2020}
            ),
            "",
            _record(_id=42, title="", text="No title here."),
            _record(_id="d3", title="Title only", text=""),
        ],
    )
    docs = list(iter_beir(corpus))
    assert [d.source for d in docs] == ["d1", "42", "d3"]
    first = docs[0]
    assert first.title == "Vitamin D"
    assert [(b.kind, b.text) for b in first.blocks] == [
        ("paragraph", "First paragraph."),
        ("paragraph", "Second paragraph."),
    ]
    assert first.media_type == "application/x-beir"
    assert first.metadata == {"year": 2020, "beir_id": "d1"}
    assert docs[1].title == "42"
    assert [b.text for b in docs[2].blocks] == ["Title only"]
    assert count_beir(corpus) == 3


def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    corpus = _write(tmp_path / "corpus.jsonl", [_record(_id="a", title="", text="ok"), "", '{"_id": "b", "text": '])
    documents = iter_beir(corpus)
    assert next(documents).source == "a"  # streamed: good lines come before the error
    with pytest.raises(LoaderError, match=r"line 3: invalid JSON") as info:
        next(documents)
    assert info.value.source == str(corpus)


def test_record_without_id(tmp_path: Path) -> None:
    corpus = _write(tmp_path / "corpus.jsonl", [_record(title="t", text="x")])
    with pytest.raises(LoaderError, match=r"line 1: not a BEIR record"):
        list(iter_beir(corpus))


def test_empty_record_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    corpus = _write(
        tmp_path / "corpus.jsonl", [_record(_id="e", title=" ", text="  "), _record(_id="f", title="", text="y")]
    )
    assert [d.source for d in iter_beir(corpus)] == ["f"]
    assert "'e'" in caplog.text


def test_missing_corpus(tmp_path: Path) -> None:
    with pytest.raises(LoaderError, match="cannot open BEIR corpus"):
        count_beir(tmp_path / "nope.jsonl")


@pytest.mark.skipif(not os.path.exists(SCIFACT), reason="SciFact corpus not present")
def test_scifact_corpus() -> None:
    assert count_beir(SCIFACT) == 5183
    first = next(iter_beir(SCIFACT))
    assert first.source == "4983"
    assert first.title.startswith("Microstructural development of human newborn")
    assert first.blocks[0].text.startswith("Alterations of the architecture")
    assert first.title not in first.text
