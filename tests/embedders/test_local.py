"""The local embedder reproduces sentence-transformers' all-MiniLM-L6-v2 vectors (fp32), and
its int8 graph stays close to them while running integer kernels.

The reference vectors in reference_minilm.json were computed once with
sentence-transformers (PyTorch) from the same bundled weights.
"""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from collections import Counter

import onnx
import onnxruntime as ort

from sourcebook.embedders import LocalEmbedder, create_embedder
from sourcebook.embedders import local, openvino_session
from sourcebook.embedders.openvino_session import bf16_available
from sourcebook.embedders.local import _ATTENTION_CELLS, _TOKENS_PER_ROW, _bert_graph, _bundled_minilm_dir
from sourcebook.errors import ConfigurationError
from sourcebook.profiling import profiled
from sourcebook.settings import Settings

REFERENCE = json.loads((Path(__file__).parent / "reference_minilm.json").read_text())


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder(precision="int8")


@pytest.fixture(scope="module")
def fp32() -> LocalEmbedder:
    return LocalEmbedder(precision="fp32")


def test_matches_sentence_transformers(fp32):
    vectors = fp32.embed_documents(REFERENCE["texts"])
    expected = np.array(REFERENCE["vectors"], dtype=np.float32)
    assert vectors.shape == (4, 384)
    assert np.abs(vectors - expected).max() < 1e-4


def test_int8_vectors_stay_close_to_fp32(embedder, fp32):
    """int8 weights (`embedding_precision`); its vectors are another model's (never mixed with fp32's).
    INT8_VERSION 4 gives these short texts cosine 0.9923 at worst (INT8_VERSION 3: 0.9965; SciFact
    abstracts 0.9977 on average); its gate was full SciFact nDCG@10 (README "Embedding speed")."""
    texts = REFERENCE["texts"] + ["Staff receive 25 days of paid annual leave.", "The server runs PostgreSQL 15."]
    cosines = np.sum(embedder.embed_documents(texts) * fp32.embed_documents(texts), axis=1)
    assert cosines.min() > 0.99
    assert embedder.name == fp32.name + "@int8"


def test_int8_kernels_survive_optimization(tmp_path):
    """Every projection runs on 8-bit weights, also after onnxruntime's optimizer: none is turned
    back into an fp32 MatMul or Attention. INT8_VERSION 4: each layer's Attention is QAttention, its
    attention output and FFN input projections dynamic int8 (DynamicQuantizeMatMul once fused), its
    FFN output MatMul MatMulNBits at accuracy_level 4 (bert_onnx.quantize_int8 says why)."""
    graph = _bert_graph(_bundled_minilm_dir(), "int8")
    built = Counter(node.op_type for node in onnx.load(graph).graph.node)
    assert (built["QAttention"], built["MatMulInteger"], built["MatMulNBits"]) == (6, 12, 6)
    assert built["MatMul"] == built["Attention"] == 0
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    optimized = onnx.load(options.optimized_model_filepath).graph.node
    kinds = Counter(node.op_type for node in optimized)
    assert (kinds["QAttention"], kinds["DynamicQuantizeMatMul"], kinds["MatMulNBits"]) == (6, 12, 6)
    assert set(kinds).isdisjoint({"MatMul", "Attention", "DequantizeLinear"})
    levels = {attr.i for node in optimized if node.op_type == "MatMulNBits" for attr in node.attribute if attr.name == "accuracy_level"}
    assert levels == {4}


needs_bf16 = pytest.mark.skipif(not bf16_available(), reason="OpenVINO or a CPU with bfloat16 instructions is missing")


@needs_bf16
def test_bf16_vectors_stay_within_fp32s_noise_and_share_its_name(fp32):
    """bf16 (OpenVINO) keeps cosine >= 0.9999 to fp32 on texts and in batches, close enough that
    its vectors are recorded as the fp32 model's and mix with them; "auto" picks it here."""
    bf16 = LocalEmbedder(precision="bf16")
    texts = REFERENCE["texts"] + [f"sentence number {i} " * (i % 7 + 1) for i in range(40)]
    vectors = bf16.embed_documents(texts)
    assert np.sum(vectors * fp32.embed_documents(texts), axis=1).min() > 0.9999
    single = np.stack([bf16.embed_query(t) for t in texts])
    assert np.sum(vectors * single, axis=1).min() > 0.9999
    assert bf16.name == fp32.name and bf16.precision == "bf16" and not bf16.batch_dependent
    assert LocalEmbedder(precision="auto").precision == "bf16"


def test_without_openvino_auto_is_fp32_and_bf16_says_what_to_install(monkeypatch):
    monkeypatch.setattr(local, "bf16_available", lambda: False)
    monkeypatch.setattr(openvino_session, "bf16_available", lambda: False)
    assert LocalEmbedder(precision="auto").precision == "fp32"
    with pytest.raises(ConfigurationError, match=r"pip install 'sourcebook\[openvino\]'"):
        LocalEmbedder(precision="bf16")


def test_unknown_precision_is_a_clear_error():
    with pytest.raises(ConfigurationError, match="embedding precision 'fp16'"):
        LocalEmbedder(precision="fp16")


def test_truncates_at_the_model_limit(embedder):
    head = "alpha beta gamma delta " * 80
    assert embedder.count_tokens([head])[0] > embedder.max_tokens
    a, b = embedder.embed_documents([head + "one ending", head + "a different ending entirely"])
    assert np.allclose(a, b, atol=1e-6)


def test_batching_keeps_order_and_values(embedder, fp32):
    """fp32 vectors do not depend on the batch; int8 ones a little (QAttention and the dynamic
    MatMuls quantize their input with one scale per run: cosine 0.9880 at worst here, 0.9968 at
    INT8_VERSION 3), which is why int8 queries, when asked for, are embedded one at a time."""
    texts = [f"sentence number {i} " * (i % 7 + 1) for i in range(40)]
    batched = fp32.embed_documents(texts)
    single = np.stack([fp32.embed_query(t) for t in texts])
    assert np.allclose(batched, single, atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    quantized = embedder.embed_documents(texts)
    assert np.sum(quantized * np.concatenate([embedder.embed_documents([t]) for t in texts]), axis=1).min() > 0.985


def test_int8_documents_get_fp32_queries_loaded_at_the_first_query(fp32):
    """`embedding_query_precision` "fp32" (the default): int8 documents, queries through the fp32
    graph, which ingestion never loads; batched queries equal single ones, as fp32's do."""
    embedder = LocalEmbedder(precision="int8")
    texts = ["How many days of annual leave?", "default port of the server", "wal_level"]
    embedder.embed_documents(texts)
    assert embedder._query_session is None
    queries = np.stack([embedder.embed_query(t) for t in texts])
    assert np.allclose(queries, fp32.embed_documents(texts), atol=1e-5)
    assert np.allclose(embedder.embed_queries(texts), queries, atol=1e-5)
    assert embedder.name.endswith("@int8") and embedder.embed_queries([]).shape == (0, 384)


def test_int8_queries_when_asked_for_match_the_documents_alone(embedder):
    """`embedding_query_precision = "int8"`: a query is the int8 graph's vector of it alone, in a
    file of queries as asked one by one (its vectors move with the batch)."""
    texts = ["How many days of annual leave?", "default port of the server"]
    int8_queries = LocalEmbedder(precision="int8", query_precision="int8")
    alone = np.concatenate([embedder.embed_documents([t]) for t in texts])
    assert np.allclose(np.stack([int8_queries.embed_query(t) for t in texts]), alone, atol=1e-6)
    assert np.allclose(int8_queries.embed_queries(texts), alone, atol=1e-6)
    with pytest.raises(ConfigurationError, match="query precision 'bf16'"):
        LocalEmbedder(precision="int8", query_precision="bf16")


def test_batches_are_cut_by_token_count(embedder):
    """Texts whose characters and tokens disagree ("a a a" vs "internationalization") are
    batched by their token counts: each batch holds the next shortest texts, within the
    batch's row and token budget, so padding stays small (by characters, these interleave)."""
    texts = [("a " * (3 + i % 37)) if i % 2 else ("internationalization " * (1 + i % 61)) for i in range(300)]
    lengths = [len(row) for row in embedder._token_rows(texts)]
    batches = list(embedder._batches(lengths))
    assert sorted(i for batch in batches for i in batch) == list(range(len(texts)))
    widths = [(min(lengths[i] for i in batch), max(lengths[i] for i in batch)) for batch in batches]
    assert all(longest <= next_shortest for (_, longest), (next_shortest, _) in zip(widths, widths[1:]))
    assert all(len(batch) <= embedder.batch_size and len(batch) * width <= embedder.batch_size * _TOKENS_PER_ROW
               for batch, (_, width) in zip(batches, widths))
    with profiled() as profile:
        embedder.embed_documents(texts)
    assert profile.counts["tokens"] == sum(lengths)
    assert profile.counts["padded_tokens"] == sum(len(batch) * width for batch, (_, width) in zip(batches, widths))


def test_full_chunks_go_two_to_a_run_and_short_windows_thirty_two(embedder):
    """A batch's attention (rows x width^2) is bounded too: 8 rows of 256 tokens fit the token
    budget but hold 4x the attention of 2, and the arena keeps its largest batch (issue 17)."""
    lengths = [256] * 8 + [60] * 64
    batches = list(embedder._batches(lengths))
    assert [len(batch) for batch in batches] == [32, 32, 2, 2, 2, 2]
    assert all(len(batch) * max(lengths[i] for i in batch) ** 2 <= _ATTENTION_CELLS for batch in batches)


def test_freed_memory_is_given_back_after_each_run(embedder, monkeypatch):
    """glibc keeps what a run's threads freed unless trimmed: the peak then grew with each batch
    shape (issue 17); a trim after every batch's run holds it down."""
    trims: list[int] = []
    monkeypatch.setattr(local, "_MALLOC_TRIM", trims.append)
    embedder.embed_documents(["a few words"] * 70)
    assert len(trims) == len(list(embedder._batches([5] * 70))) == 3


def test_progress_reports_every_text(embedder):
    seen: list[int] = []
    embedder.embed_documents(["a"] * 70, progress=seen.append)
    assert sum(seen) == 70


def test_metadata(embedder):
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2@int8"
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


@pytest.mark.parametrize("call", ["count_tokens", "embed_documents"])
def test_a_long_text_keeps_memory_small(call):
    """A 2 MB text without sentence ends is counted whole by the chunker; tokenizing it in one
    call held about 1 KB a token (400 MB). Embedding reads only its first tokens, so it
    tokenizes only the text's head. In a fresh process so the peak is this call's."""
    script = (
        "import resource\n"
        "from sourcebook.embedders import LocalEmbedder\n"
        "embedder = LocalEmbedder()\n"
        "text = ' '.join(f'word{i % 997} river policy' for i in range(180_000))\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"embedder.{call}([text])\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300)
    assert float(done.stdout.split()[-1]) < 60


def test_parallel_runs_share_one_session(monkeypatch):
    """Two batches run at once on one onnxruntime session, so the weights are loaded once (a
    session per run cost about 130 MB more peak at fp32, bench/embedding_sessions.py). At fp32,
    whose vectors do not depend on their batch, a text's vector from the parallel runs is exactly
    its vector embedded alone."""
    created: list[object] = []
    real = ort.InferenceSession

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            created.append(self)

    monkeypatch.setattr(ort, "InferenceSession", Counted)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    embedder = LocalEmbedder(precision="fp32")
    assert len(created) == 1
    in_flight, most = 0, 0
    lock = threading.Lock()
    run = created[0].run

    def counting_run(*args, **kwargs):
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        try:
            return run(*args, **kwargs)
        finally:
            with lock:
                in_flight -= 1

    monkeypatch.setattr(created[0], "run", counting_run)
    texts = [f"sentence number {i} " * (1 + i % 20) for i in range(96)]
    vectors = embedder.embed_documents(texts)
    assert most == 2  # two batches at once, on the one session
    assert np.allclose(vectors[5], embedder.embed_documents([texts[5]])[0], atol=1e-5)


_BUILD_PEAK = """
import sys
from sourcebook.embedders.local import _bert_graph, _bundled_minilm_dir

def hwm():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmHWM"))

before = hwm()
source = _bert_graph(_bundled_minilm_dir(), "int8")
print(isinstance(source, str), hwm() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_a_graph_is_built_in_a_child_process_not_in_the_one_that_ingests(tmp_path: Path) -> None:
    """Issue 17: building the int8 graph (onnx's protobufs, the quantizer's copies) raised the
    building process's peak by about 400 MB, once per install and recipe, so a first `add` peaked
    far above what its batches keep (679 MB against under 430 for the 2,000-page PDF). Built in a
    child, the process that asked for it grows by its imports only; the graph is cached as before."""
    env = {**os.environ, "SOURCEBOOK_CACHE": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", _BUILD_PEAK], env=env, capture_output=True, text=True, check=True)
    cached, growth = run.stdout.split()
    assert cached == "True" and list((tmp_path / "onnx").glob("*.onnx"))
    assert int(growth) < 150, run.stdout
