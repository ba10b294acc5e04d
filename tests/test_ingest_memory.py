"""Ingest memory is bounded: a constant plus the largest batch, not a multiple of the file.

Each file is ingested in a fresh interpreter (peak RSS cannot be reset within one; it is read
from /proc, Linux's high-water mark of this process alone), with a
word-counting stand-in for the model so the test measures the pipeline (load, chunk,
windows, write) in seconds. bench/ingest_memory.py measures the same with the real model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from sourcebook import KnowledgeBase, Settings
    from sourcebook.errors import LoaderError
    from sourcebook.wiring import Components

    class WordEmbedder:
        name, dimension, max_tokens = "words", 384, 254

        def count_tokens(self, texts):
            return [len(text.split()) for text in texts]

        def embed_documents(self, texts, progress=None):
            vectors = np.ones((len(texts), self.dimension), dtype=np.float32) / self.dimension**0.5
            if progress:
                progress(len(texts))
            return vectors

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    def peak_mb():
        # VmHWM, not getrusage's ru_maxrss: that survives exec, so it would start at the peak
        # of the process that spawned this one (pytest, holding the generated file's text)
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024

    settings = Settings(db=sys.argv[2])
    kb = KnowledgeBase(Components.build(settings).store, settings, WordEmbedder())
    kb.add(sys.argv[3])  # a tiny file first: lazy imports and caches are not the document's
    baseline = peak_mb()
    if sys.argv[4] == "move":  # the tiny file "moved" to the large one, which holds other text
        try:
            kb.move(sys.argv[3], sys.argv[1])
        except LoaderError as exc:
            assert "other content" in str(exc), exc
    else:
        [result] = kb.add(sys.argv[1])
        assert result.action == "added", result
    print(json.dumps({"baseline": baseline, "peak": peak_mb()}))
    """
)


def _prose(path: Path, megabytes: float, encoding: str = "utf-8") -> Path:
    """Distinct sentences (no two chunks share a hash) in blank-line separated paragraphs, with
    accented words (a file that is not UTF-8 when `encoding` says so)."""
    words = "model data rivière policy énergie signal history method value growth theory sample".split()
    paragraphs, size, n = [], 0, 0
    while size < megabytes * 2**20:
        sentences = [
            f"{words[(n + i) % len(words)].capitalize()} {n} {' '.join(words[i % 5 :])} {n * 7 + i}."
            for i in range(6)
        ]
        paragraphs.append(" ".join(sentences))
        size += len(paragraphs[-1]) + 2
        n += 1
    path.write_text("\n\n".join(paragraphs), encoding=encoding)
    return path


def _growth_mb(tmp_path: Path, megabytes: float, encoding: str = "utf-8", action: str = "add") -> float:
    document = _prose(tmp_path / f"prose-{megabytes}-{encoding}.txt", megabytes, encoding)
    warm = _prose(tmp_path / "warm.txt", 0.01)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(document), str(tmp_path / f"kb-{megabytes}-{encoding}-{action}.db"), str(warm), action],
        capture_output=True, text=True, check=True, timeout=300,
    )
    peaks = json.loads(done.stdout.strip().splitlines()[-1])
    return float(peaks["peak"] - peaks["baseline"])


@pytest.mark.parametrize("encoding", ["utf-8", "cp1252"])
def test_peak_memory_of_a_text_file_does_not_grow_with_its_size(tmp_path: Path, encoding: str) -> None:
    """16x the file may not cost more than a few MB of noise: a large text file is streamed
    (loaders/textfile.py), chunked a part at a time and spooled, so a constant and a batch are
    held whatever its size. Growth over a tiny file's peak (2026-11-27) for 1, 12 and 16 MB of
    prose: 34.5, 56.3 (once 42.4) and 61.7 MB with the file read whole (e9f530f, about 1.8 MB
    a MB); 35.4-36.0, 37.6 and 37.5-39.5 MB streamed. (2026-11-25, before the streaming write:
    61 MB for 1 MB, 326 MB for 4 MB.) A file in another encoding (cp1252) was read whole until
    2026-11-27: 36.8 and 65.4 MB for 1 and 16 MB; streamed, 37.8 and 39.6 MB."""
    small, large = 1.0, 16.0
    small_growth = _growth_mb(tmp_path, small, encoding)
    large_growth = _growth_mb(tmp_path, large, encoding)
    assert large_growth - small_growth < 8.0, (small_growth, large_growth)


def test_moving_a_file_hashes_it_in_pieces(tmp_path: Path) -> None:
    """`kb.move` checks the file holds what was stored by its fingerprint, which it hashes
    without holding the file (`identify_source`): a 32 MB file raised the peak 32.5 MB when
    read whole, 1.9 MB hashed in pieces (2026-11-27)."""
    assert _growth_mb(tmp_path, 32.0, action="move") < 8.0
