"""`sourcebook eval`: measure retrieval on a BEIR dataset and answers on a QA file.

`eval retrieval` builds (or reuses) its own index; `eval answers` reads the knowledge base
the global --db names, which must exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..evaluation.answers import AnswerReport, QuestionResult, evaluate_answers, read_qa
from ..evaluation.dataset import load_dataset
from ..evaluation.report import answer_rows, retrieval_rows, write_report
from ..evaluation.retrieval import RetrievalReport, evaluate_retrieval, open_index
from ..retrieval import MODES
from ..settings import RetrievalMode
from ._common import JsonOpt, cli_state, emit_json, err, examples, ingest_progress, open_kb, out, progress_bar

group = typer.Typer(
    help="Measure retrieval and answer quality.",
    no_args_is_help=True,
    epilog=examples("sourcebook eval retrieval datasets/scifact", "sourcebook --db kb.db eval answers examples/questions.jsonl"),
)
ReportOpt = Annotated[
    Optional[Path], typer.Option("--report", help="Write a Markdown report here, with its plot beside it (.png).")
]


def _modes(value: str) -> list[RetrievalMode]:
    modes = [m.strip() for m in value.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise typer.BadParameter(f"unknown mode(s) {', '.join(unknown) or '(none)'}; use {','.join(MODES)}")
    return modes  # type: ignore[return-value]


@contextmanager
def _bar(enabled: bool, tasks: dict[str, int]) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr with one task per key; yields `advance(key)`."""
    if not enabled:
        yield lambda key: None
        return
    with progress_bar() as bar:
        ids = {key: bar.add_task(key, total=total) for key, total in tasks.items()}
        yield lambda key: bar.advance(ids[key])


def _save_report(report: RetrievalReport | AnswerReport, path: Path | None, as_json: bool) -> None:
    if path is None:
        return
    markdown, image = write_report(report, path)
    if not as_json:
        err.print(f"wrote {markdown} and {image}", highlight=False)


@group.command("retrieval", epilog=examples(
    "sourcebook eval retrieval datasets/scifact --modes keyword,hybrid",
    "sourcebook eval retrieval datasets/scifact --report scifact.md --json",
))
def retrieval(
    ctx: typer.Context,
    dataset_dir: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="A BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/*.tsv.")
    ],
    modes: Annotated[str, typer.Option("--modes", help="Comma-separated retrieval modes.")] = ",".join(MODES),
    db: Annotated[
        Optional[Path],
        typer.Option("--db", help="Index to build or reuse (default: one per dataset and settings, in the user cache)."),
    ] = None,
    split: Annotated[str, typer.Option("--split", help="Which qrels/<split>.tsv judges the queries.")] = "test",
    report: ReportOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Index DATASET_DIR (incrementally), run its judged queries per mode: nDCG, recall, MRR, latency."""
    chosen = _modes(modes)
    queries = len(load_dataset(dataset_dir, split).qrels)
    with open_index(dataset_dir, db, cli_state(ctx).settings) as kb, ingest_progress(err.is_terminal) as ingest, \
            _bar(err.is_terminal, {f"{m} queries": queries for m in chosen}) as advance:
        result = evaluate_retrieval(
            kb, dataset_dir, chosen, split=split, progress=ingest, on_query=lambda mode: advance(f"{mode} queries")
        )
    _save_report(result, report, as_json)
    if as_json:
        emit_json(result.to_dict())
        return
    header, rows = retrieval_rows(result)
    # Transposed (a column per mode) so it fits an 80-column terminal.
    title = f"{result.dataset}: {result.queries} queries, {result.documents} documents"
    table = Table("", *(row[0] for row in rows), title=title)
    for i, name in enumerate(header[1:], start=1):
        table.add_row(name, *(row[i] for row in rows))
    out.print(table)
    actions = ", ".join(f"{n} {action}" for action, n in sorted(result.ingest_actions.items()))
    out.print(f"[dim]index {result.index} ({actions}; {result.ingest_seconds:.1f} s); "
              f"latency: one search at top_k={result.ks[0]}, query embedding included[/dim]", highlight=False)


@group.command("answers", epilog=examples(
    "sourcebook --db kb.db eval answers examples/questions.jsonl",
    "sourcebook eval answers qa.jsonl --top-k 3 --report answers.md --json",
    "sourcebook --db git.db eval answers eval/gitdoc/questions.jsonl --split test",
))
def answers(
    ctx: typer.Context,
    qa_file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, help='JSONL of {"id", "question", "answers": [..], "gold_sources": [..]}.'),
    ],
    top_k: Annotated[
        Optional[int], typer.Option("--top-k", "-k", min=1, help="k of source recall@k (default: the hits ask uses).")
    ] = None,
    split: Annotated[
        str, typer.Option("--split", help="Questions to ask: dev, test (held out) or all; a record without a split is dev.")
    ] = "all",
    report: ReportOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask every question of QA_FILE against the knowledge base (--db): hits, sources, citations, abstention, calibration."""
    total = len(read_qa(qa_file, split))
    with open_kb(ctx, must_exist=True) as kb, _bar(err.is_terminal, {"questions": total}) as advance:
        result = evaluate_answers(kb, qa_file, top_k, on_question=lambda _: advance("questions"), split=split)
    _save_report(result, report, as_json)
    if as_json:
        emit_json(result.to_dict())
        return
    summary = Table("measure", "value", title=f"answers: {qa_file} ({split})")
    for name, value in answer_rows(result):
        summary.add_row(name, value)
    out.print(summary)
    misses = [r for r in result.results if _missed(r)]
    if misses:
        out.print("[dim]missed: " + ", ".join(r.id for r in misses) + "[/dim]", highlight=False)


def _missed(result: QuestionResult) -> bool:
    """A question the system got wrong: no hit on an answerable one, an answer to an unanswerable one."""
    return (result.answerable and not result.hit) or (not result.answerable and not result.abstained)
