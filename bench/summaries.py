"""What a summary and "more like this" cost, per document of a knowledge base, side by side.

For every ready document (default: examples/docs in a fresh temporary knowledge base):

- "windows": an extractive summary made fresh (`refresh=True`): sentence vectors come from the
  stored sentence windows, nothing is embedded (what Sourcebook does);
- "embed": the same candidate sentences embedded with the model (what a summary would cost if it
  embedded its sentences, the first design);
- "cached": the summary read back from the summary cache (the document unchanged);
- "related": `kb.related(doc)` (mean chunk vector, one vector search).

Each is repeated `--repeat` times in one process, in turns; the medians (ms, summed over the
documents) and the ratios are printed as JSON.

    python bench/summaries.py [--db KB.db] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sourcebook import KnowledgeBase
from sourcebook.answering.summaries import _candidates, _sections

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "docs"


def _ms(action: Any) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def measure(kb: KnowledgeBase, repeat: int) -> dict[str, Any]:
    documents = [d for d in kb.documents(status="ready") if d.chunk_count]
    kb.embedder.embed_documents(["warm up"])
    runs: dict[str, list[float]] = {"windows": [], "embed": [], "cached": [], "related": []}
    for _ in range(repeat):
        totals = dict.fromkeys(runs, 0.0)
        for record in documents:
            chunks = kb.chunks(record.id)
            sentences = [c.text for section in _sections(chunks) for c in _candidates(section)]
            totals["windows"] += _ms(lambda: kb.summarize(record.id, refresh=True))
            totals["embed"] += _ms(lambda: kb.embedder.embed_documents(sentences))
            totals["cached"] += _ms(lambda: kb.summarize(record.id))
            totals["related"] += _ms(lambda: kb.related(record.id))
        for name, total in totals.items():
            runs[name].append(total)
    medians = {name: round(statistics.median(values), 1) for name, values in runs.items()}
    return {
        "documents": len(documents), "chunks": sum(d.chunk_count for d in documents), "repeat": repeat,
        "median_ms_all_documents": medians,
        "embed_over_windows": round(medians["embed"] / medians["windows"], 1),
        "windows_over_cached": round(medians["windows"] / max(medians["cached"], 0.01), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a knowledge base to measure (default: examples/docs, added to a temporary one)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if args.db:
        with KnowledgeBase.open(args.db) as kb:
            print(json.dumps(measure(kb, args.repeat), indent=1))
        return
    with tempfile.TemporaryDirectory() as folder, KnowledgeBase.open(Path(folder) / "kb.db") as kb:
        kb.add(str(EXAMPLES))
        print(json.dumps(measure(kb, args.repeat), indent=1))


if __name__ == "__main__":
    main()
