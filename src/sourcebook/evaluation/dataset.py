"""Reading BEIR-layout datasets: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.

The layout every public retrieval benchmark ships in (Thakur et al., 2021), so
`sourcebook eval retrieval` runs on any of them, and on a user's own judged set
written the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError


@dataclass(frozen=True)
class BeirDataset:
    """A dataset's files and its judged queries (only those with qrels in the split)."""

    root: Path
    corpus: Path
    split: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    @property
    def name(self) -> str:
        return self.root.name


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """query id -> document id -> gain, from a TSV with or without its header line."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.rstrip("\n").split("\t")
            if not line.strip() or (number == 1 and not fields[-1].lstrip("-").isdigit()):
                continue
            if len(fields) < 3:
                raise ConfigurationError(f"{path} line {number}: expected query-id, corpus-id, score (tab-separated)")
            qrels.setdefault(fields[0], {})[fields[1]] = int(fields[-1])
    return qrels


def read_queries(path: str | Path) -> dict[str, str]:
    """query id -> text, from BEIR's queries.jsonl (`{"_id", "text"}` per line), in file order
    (`sourcebook search --queries-file` prints its results in it). A bad line is named."""
    queries: dict[str, str] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                queries[str(record["_id"])] = str(record["text"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ConfigurationError(f'{path} line {number}: expected {{"_id", "text"}} ({exc})') from None
    return queries


def load_dataset(root: str | Path, split: str = "test") -> BeirDataset:
    """The dataset at `root`; the judged queries are those of qrels/<split>.tsv that have a text."""
    root = Path(root)
    corpus, queries_path, qrels_path = root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    missing = [str(p) for p in (corpus, queries_path, qrels_path) if not p.is_file()]
    if missing:
        raise ConfigurationError(f"not a BEIR dataset (missing {', '.join(missing)})")
    queries = read_queries(queries_path)
    qrels = {q: judged for q, judged in read_qrels(qrels_path).items() if q in queries}
    if not qrels:
        raise ConfigurationError(f"{qrels_path} judges none of the queries in {queries_path}")
    return BeirDataset(root, corpus, split, {q: queries[q] for q in qrels}, qrels)
