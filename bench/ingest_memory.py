"""Peak memory and time of ingesting one large plain-text file and one long PDF.

Generates the inputs (plain prose of N MB: random sentences from a small vocabulary, in
paragraphs; the same words run on, without sentence ends or breaks; a PDF of N pages
rendered with fpdf2, with section headings), then ingests each into a fresh knowledge base
in a fresh subprocess, so one input's peak cannot hide behind another's. Prints peak RSS
(VmHWM: getrusage's ru_maxrss survives exec, so a child's would start at the peak of the
process that spawned it), total seconds (`kb.add`: read, parse, chunk, embed, write) and
parse seconds (the file read and parsed whole, timed after `kb.add` once its peak is taken,
so that parse's memory is not in it) per input.

`--embedder fake` keeps the real tokenizer (chunking counts real tokens) but returns
random vectors: the pipeline's own memory and time, without the model's hours on a
50 MB file (about 600,000 chunk and window texts). `--embedder model` runs the default
model at the product's default precision (`Settings.embedding_precision`: int8 since
INT8_VERSION 2); `--precision fp32` runs the full-precision graph instead, and every row says
which ran. Each row also has the seconds per stage of `kb.add`
(profiling.py: load, chunk, tokenize, model, write; stages overlap, so they can add up to
more than the total).

    python bench/ingest_memory.py --text-mb 0.5 2 --run-on-mb 2 --pdf-pages 200 [--embedder fake] [--json]
    python bench/ingest_memory.py --text-mb --run-on-mb --pdf-pages 2000 [--precision fp32]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import numpy as np

from sourcebook.settings import Settings

INPUTS = Path(tempfile.gettempdir()) / "sourcebook-ingest-memory"
WORDS = (
    "the of and to in is was for that with as on by at from this are be it an which or have has "
    "model system data method result study analysis process structure function memory document text "
    "section chapter theory practice evidence measure value table figure sample effect cause change "
    "growth river mountain history culture language science policy market energy network signal"
).split()


def _paragraph(rng: random.Random) -> str:
    sentences = (
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))).capitalize() + "."
        for _ in range(rng.randint(3, 8))
    )
    return " ".join(sentences)


def make_text(path: Path, megabytes: float, run_on: bool = False, seed: int = 7) -> Path:
    """Plain prose of just under `megabytes` MB (50 MB stays within the default max_file_bytes)
    in blank-line separated paragraphs; `run_on`: the same words with no sentence ends or line
    breaks (a dump, a transcript), which the chunker must cut at words."""
    rng = random.Random(seed)
    target, written = int(megabytes * 1024 * 1024), 0
    with open(path, "w", encoding="utf-8") as out:
        while True:
            paragraph = _paragraph(rng)
            text = paragraph.replace(".", "") + " " if run_on else paragraph + "\n\n"
            if written + len(text) > target:  # ASCII: one byte a character
                return path
            written += out.write(text)


def make_pdf(path: Path, pages: int, seed: int = 7) -> Path:
    """A text PDF of `pages` pages: 11 pt prose under 16 pt bold section headings."""
    from fpdf import FPDF

    rng = random.Random(seed)
    pdf = FPDF()
    pdf.set_auto_page_break(True, 15)
    pdf.add_page()
    section = 0
    while pdf.pages_count < pages:
        if section == 0 or rng.random() < 0.15:
            section += 1
            pdf.set_font("Helvetica", "B", 16)
            pdf.multi_cell(0, 9, f"Section {section}: {rng.choice(WORDS).title()}")
            pdf.ln(2)
        pdf.set_font("Helvetica", "", 11)
        pdf.multi_cell(0, 6, _paragraph(rng))
        pdf.ln(3)
    pdf.output(str(path))
    return path


class FakeEmbedder:
    """The real tokenizer's counts with random unit vectors: the pipeline without the model."""

    name = "bench-fake"
    dimension = 384

    def __init__(self) -> None:
        from sourcebook.embedders.local import LocalEmbedder

        self._real = LocalEmbedder()
        self.max_tokens = self._real.max_tokens
        self._rng = np.random.default_rng(0)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._real.count_tokens(texts)

    def embed_documents(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        vectors = self._rng.standard_normal((len(texts), self.dimension), dtype=np.float32)
        if progress:
            progress(len(texts))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def peak_rss_mb() -> float:
    """The process's peak resident set (Linux's VmHWM, in kB): its own, unlike `ru_maxrss`, which
    survives exec and so starts at the peak of the process that spawned it."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def child(path: str, embedder_kind: str, precision: str) -> dict[str, Any]:
    """Ingest `path` into a fresh knowledge base (run in its own process)."""
    from sourcebook import KnowledgeBase, Settings
    from sourcebook.loaders import parse, read_source
    from sourcebook.profiling import profiled
    from sourcebook.wiring import Components

    folder = tempfile.mkdtemp(prefix="ingest-memory-")
    # No time limit: a 50 MB text with the model runs past the product's max_ingest_seconds (an
    # hour) on 2 busy cores, which would end the measurement with nothing stored.
    settings = Settings(db=f"{folder}/kb.db", embedding_precision=precision, max_ingest_seconds=7 * 86_400)
    parts = Components.build(settings)
    embedder = FakeEmbedder() if embedder_kind == "fake" else parts.embedder
    kb = KnowledgeBase(parts.store, settings, embedder)
    baseline = peak_rss_mb()
    started = time.perf_counter()
    with profiled() as profile:
        [result] = kb.add(path)
    total_seconds = time.perf_counter() - started
    peak = peak_rss_mb()
    started = time.perf_counter()
    blocks = len(parse(read_source(path, settings)).blocks)
    return {
        "input": Path(path).name,
        "megabytes": round(Path(path).stat().st_size / 2**20, 2),
        "embedder": embedder_kind if embedder_kind == "fake" else f"model ({precision})",
        "action": result.action,
        "blocks": blocks,
        "chunks": result.chunks,
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(peak, 1),
        "parse_seconds": round(time.perf_counter() - started, 2),
        "total_seconds": round(total_seconds, 2),
        "stage_seconds": {name: round(seconds, 1) for name, seconds in profile.seconds.items()},
    }


def measure(path: Path, embedder_kind: str, precision: str) -> dict[str, Any]:
    """`child` in a fresh interpreter; its JSON line back."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--embedder", embedder_kind, "--precision", precision],
        capture_output=True, text=True, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text-mb", type=float, nargs="*", default=[2.0, 50.0])
    parser.add_argument("--run-on-mb", type=float, nargs="*", default=[2.0])
    parser.add_argument("--pdf-pages", type=int, nargs="*", default=[2000])
    parser.add_argument("--embedder", choices=["model", "fake"], default="model")
    precision = Settings.model_fields["embedding_precision"]
    parser.add_argument("--precision", choices=get_args(precision.annotation), default=precision.default,
                        help=f"the model's precision (default: the product's, {precision.default})")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of a table")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.embedder, args.precision)))
        return
    INPUTS.mkdir(exist_ok=True)
    inputs = [
        path if (path := INPUTS / f"prose-{mb:g}mb.txt").exists() else make_text(path, mb) for mb in args.text_mb
    ] + [
        path if (path := INPUTS / f"run-on-{mb:g}mb.txt").exists() else make_text(path, mb, run_on=True)
        for mb in args.run_on_mb
    ] + [
        path if (path := INPUTS / f"pages-{n}.pdf").exists() else make_pdf(path, n) for n in args.pdf_pages
    ]
    rows = []
    for path in inputs:
        rows.append(measure(path, args.embedder, args.precision))
        if not args.json:
            row = rows[-1]
            print(
                f"{row['input']:>20} {row['megabytes']:>7} MB {row['action']:>7} {row['chunks']:>7} chunks  "
                f"peak {row['peak_rss_mb']:>7} MB (baseline {row['baseline_rss_mb']})  "
                f"parse {row['parse_seconds']:>7} s  total {row['total_seconds']:>8} s  "
                f"{row['embedder']}  stages {row['stage_seconds']}",
                flush=True,
            )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
