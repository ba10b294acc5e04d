"""The local embedder reproduces sentence-transformers' all-MiniLM-L6-v2 vectors.

The reference vectors in reference_minilm.json were computed once with
sentence-transformers (PyTorch) from the same bundled weights.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from sourcebook.embedders import LocalEmbedder, create_embedder
from sourcebook.errors import ConfigurationError
from sourcebook.settings import Settings

REFERENCE = json.loads((Path(__file__).parent / "reference_minilm.json").read_text())


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def test_matches_sentence_transformers(embedder):
    vectors = embedder.embed_documents(REFERENCE["texts"])
    expected = np.array(REFERENCE["vectors"], dtype=np.float32)
    assert vectors.shape == (4, 384)
    assert np.abs(vectors - expected).max() < 1e-4


def test_truncates_at_the_model_limit(embedder):
    head = "alpha beta gamma delta " * 80
    assert embedder.count_tokens([head])[0] > embedder.max_tokens
    a, b = embedder.embed_documents([head + "one ending", head + "a different ending entirely"])
    assert np.allclose(a, b, atol=1e-6)


def test_batching_keeps_order_and_values(embedder):
    texts = [f"sentence number {i} " * (i % 7 + 1) for i in range(40)]
    batched = embedder.embed_documents(texts)
    single = np.stack([embedder.embed_query(t) for t in texts[:5]])
    assert np.allclose(batched[:5], single, atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_progress_reports_every_text(embedder):
    seen: list[int] = []
    embedder.embed_documents(["a"] * 70, progress=seen.append)
    assert sum(seen) == 70


def test_metadata(embedder):
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dimension == 384
    assert embedder.max_tokens == 254
    assert embedder.count_tokens(["hello world", ""]) == [2, 0]


def test_semantics(embedder):
    q = embedder.embed_query("How many vacation days do employees get?")
    docs = embedder.embed_documents(["Staff receive 25 days of paid annual leave.", "The server runs PostgreSQL 15."])
    assert docs[0] @ q > docs[1] @ q


def test_unknown_model_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="neither a bundled model"):
        LocalEmbedder("BAAI/bge-small-en-v1.5")
    with pytest.raises(ConfigurationError, match="no tokenizer.json"):
        LocalEmbedder(str(tmp_path))


def test_create_embedder_reuses_loaded_model():
    assert create_embedder(Settings()) is create_embedder(Settings())


def test_long_texts_are_counted_exactly_in_segments(embedder):
    """count_tokens sums a long text over whitespace segments (memory, issue 17 #4): the
    same count as tokenizing it whole, for prose, a giant word and blank texts."""
    prose = " ".join(f"Sentence {i} about the river's growth, and a-policy." for i in range(3000))
    for text in (prose, "x" * 20_000 + " " + prose[:30_000], "tail " + "y" * 9_000, "", "  "):
        whole = len(embedder._tokenizer.encode(text, add_special_tokens=False).ids)
        assert embedder.count_tokens([text, "hello world"]) == [whole, 2]


def test_counting_a_long_text_keeps_memory_small(tmp_path):
    """A 2 MB text without sentence ends is counted whole by the chunker; tokenizing it in one
    call held about 1 KB a token (400 MB). In a fresh process so the peak is this call's."""
    script = (
        "import resource\n"
        "from sourcebook.embedders import LocalEmbedder\n"
        "embedder = LocalEmbedder()\n"
        "text = ' '.join(f'word{i % 997} river policy' for i in range(180_000))\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "embedder.count_tokens([text])\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert float(done.stdout.split()[-1]) < 60
