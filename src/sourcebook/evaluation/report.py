"""Markdown reports with a PNG plot, for evaluation results worth keeping or sharing.

The plot is written beside the report (out.md -> out.png) and linked relatively, so
the pair can be committed or attached as is. matplotlib is an optional extra
(`pip install 'sourcebook[eval]'`): only writing a report needs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigurationError
from .answers import AnswerReport
from .retrieval import RetrievalReport

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_LABELS = {"ndcg": "nDCG", "recall": "recall", "mrr": "MRR"}


def metric_label(name: str) -> str:
    """"ndcg@10" -> "nDCG@10", as papers and BEIR's tables spell them."""
    kind, _, k = name.partition("@")
    return f"{_LABELS.get(kind, kind)}@{k}"


def fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def retrieval_rows(report: RetrievalReport) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-mode table, shared by the Markdown report and the terminal."""
    names = list(report.modes[0].metrics) if report.modes else []
    header = ["mode", *map(metric_label, names), "p50 ms", "p95 ms"]
    rows = [
        [m.mode, *(fmt(m.metrics[n]) for n in names), fmt(m.latency_p50_ms, 1), fmt(m.latency_p95_ms, 1)]
        for m in report.modes
    ]
    return header, rows


def answer_rows(report: AnswerReport) -> list[tuple[str, str]]:
    """(measure, value) pairs of the answers summary, shared by the Markdown report and the terminal."""
    return [
        ("questions (answerable / unanswerable)", f"{report.questions} ({report.answerable} / {report.unanswerable})"),
        ("answer hit rate", fmt(report.answer_hit_rate)),
        (f"source recall@{report.k}", fmt(report.source_recall_at_k)),
        ("citation precision", fmt(report.citation_precision)),
        ("gold page/section in top 5", fmt(report.gold_in_top_rate)),
        ("citation on gold page/section", fmt(report.cited_gold_rate)),
        ("abstention precision", fmt(report.abstention_precision)),
        ("abstention recall (on unanswerable)", fmt(report.abstention_recall)),
        ("false abstention (on answerable)", fmt(report.false_abstention_rate)),
        ("expected calibration error", fmt(report.ece)),
    ]


def retrieval_markdown(report: RetrievalReport, image: str) -> str:
    header, rows = retrieval_rows(report)
    return "\n\n".join([
        f"# Retrieval evaluation: {report.dataset}",
        f"{report.queries} judged queries (qrels/{report.split}.tsv), {report.documents} documents in "
        f"{report.chunks} chunks, embedding model {report.embedding_model}. Index: `{report.index}`.",
        _table(header, rows),
        f"Latency: wall time of one search at top_k={report.ks[0]}, query embedding included "
        "(p50 and p95 over the queries).",
        f"![per-mode figures]({image})",
        f"Reproduce: `sourcebook eval retrieval {report.dataset_dir} --modes {','.join(m.mode for m in report.modes)}`",
    ]) + "\n"


def answers_markdown(report: AnswerReport, image: str) -> str:
    reliability = [
        [f"{b.lower:.1f}-{b.upper:.1f}", str(b.count), fmt(b.mean_confidence, 3), fmt(b.accuracy, 3)]
        for b in report.reliability
    ]
    return "\n\n".join([
        f"# Answer evaluation ({report.split} split)" if report.split != "all" else "# Answer evaluation",
        _table(["measure", "value"], [list(row) for row in answer_rows(report)]),
        "## Confidence calibration",
        "Accuracy is the share of questions in the bin that got a correct answer (an abstention never is).",
        _table(["confidence", "questions", "mean confidence", "accuracy"], reliability),
        f"![reliability diagram]({image})",
    ]) + "\n"


def _figure(width: float, height: float) -> Figure:
    """A bare Figure (no pyplot): no global figure registry, no display backend, safe in servers and threads."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigurationError("writing a report needs matplotlib: pip install 'sourcebook[eval]'") from None
    return Figure(figsize=(width, height))


def plot_retrieval(report: RetrievalReport, path: Path) -> None:
    """Grouped bars: one group per metric, one bar per mode."""
    names = list(report.modes[0].metrics) if report.modes else []
    fig = _figure(2.4 + 1.2 * len(names), 4)
    ax = fig.subplots()
    width = 0.8 / max(len(report.modes), 1)
    for i, mode in enumerate(report.modes):
        xs = [x + (i - (len(report.modes) - 1) / 2) * width for x in range(len(names))]
        bars = ax.bar(xs, [mode.metrics[n] for n in names], width, label=mode.mode)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(range(len(names)), [metric_label(n) for n in names])
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{report.dataset}: {report.queries} queries")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside the axes: never over a bar
    _save(fig, path)


def plot_reliability(report: AnswerReport, path: Path) -> None:
    """Reliability diagram: accuracy per confidence bin against the diagonal of perfect calibration."""
    fig = _figure(4.5, 4.5)
    ax = fig.subplots()
    filled = [b for b in report.reliability if b.count]
    width = 1 / max(len(report.reliability), 1)
    ax.bar([b.lower for b in filled], [b.accuracy for b in filled], width, align="edge", edgecolor="black", label="accuracy")
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", label="perfect calibration")
    ax.set_xlabel("confidence")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(f"{report.questions} questions, ECE {fmt(report.ece, 3)}")
    ax.legend(loc="upper left")
    _save(fig, path)


def _save(fig: Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def write_report(report: RetrievalReport | AnswerReport, path: str | Path) -> tuple[Path, Path]:
    """Write the Markdown report and its plot (same name, .png); returns both paths."""
    markdown = Path(path)
    markdown.parent.mkdir(parents=True, exist_ok=True)
    image = markdown.with_suffix(".png")
    if isinstance(report, RetrievalReport):
        plot_retrieval(report, image)
        text = retrieval_markdown(report, image.name)
    else:
        plot_reliability(report, image)
        text = answers_markdown(report, image.name)
    markdown.write_text(text, encoding="utf-8")
    return markdown, image
