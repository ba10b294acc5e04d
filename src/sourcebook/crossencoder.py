"""A cross-encoder of the user's choice as the reranking stage's scorer (`rerank_model`).

A cross-encoder reads the query and a passage together and scores how well one answers the
other: the strongest reranking signal there is, and one no offline model bundled here provides.
So it is configured by path: a folder holding `model.onnx` (or `onnx/model.onnx`) and
`tokenizer.json`, as sentence-transformers cross-encoders exported to ONNX ship (for instance
cross-encoder/ms-marco-MiniLM-L-6-v2 downloaded beforehand). Its logit (the last one, for a model
with a class per label) replaces the linear model's score; the entries a query names still come
first. Its quality was not measured here (no such model offline): measure it with
`SOURCEBOOK_RERANK=true SOURCEBOOK_RERANK_MODEL=DIR sourcebook eval retrieval ...` before relying on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import ConfigurationError
from .models import StoredChunk
from .reranking import LinearReranker, Reranker, identifiers, named_entry

MAX_TOKENS = 512
"""Longest (query, passage) pair fed to the model; BERT-sized cross-encoders stop there."""
BATCH = 16


class CrossEncoderReranker:
    """Orders candidates by an ONNX cross-encoder's score of (query, chunk prefix and text)."""

    def __init__(self, path: str) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        folder = Path(path).expanduser()
        model = next((f for f in (folder / "model.onnx", folder / "onnx" / "model.onnx") if f.is_file()), None)
        tokenizer = folder / "tokenizer.json"
        if model is None or not tokenizer.is_file():
            raise ConfigurationError(f"rerank_model {path}: expected a folder with model.onnx and tokenizer.json")
        try:
            self._session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # onnxruntime and tokenizers raise their own types for a bad file
            raise ConfigurationError(f"rerank_model {path}: cannot load it ({exc})") from None
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._inputs = {model_input.name for model_input in self._session.get_inputs()}

    def scores(self, query: str, chunks: Sequence[StoredChunk]) -> np.ndarray:
        """The model's relevance logit of each chunk for `query`."""
        found: list[np.ndarray] = []
        for first in range(0, len(chunks), BATCH):
            pairs = [(query, f"{c.prefix}\n{c.text}" if c.prefix else c.text) for c in chunks[first : first + BATCH]]
            encodings = self._tokenizer.encode_batch(pairs)
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            logits = self._session.run(None, {name: value for name, value in feeds.items() if name in self._inputs})[0]
            found.append(np.asarray(logits, dtype=np.float64).reshape(len(pairs), -1)[:, -1])
        return np.concatenate(found) if found else np.zeros(0)

    def rerank(self, query: str, chunks: Sequence[StoredChunk], fused: Sequence[float]) -> list[int]:
        """The candidates' indexes, best first: named entries, then by the model's score."""
        del fused  # the model reads the texts themselves; the fused order only breaks ties
        scores = self.scores(query, chunks)
        idents = identifiers(query)
        named = [named_entry(idents, chunk) for chunk in chunks]
        return sorted(range(len(chunks)), key=lambda i: (not named[i], -scores[i], i))


def reranker_for(model: str | None) -> Reranker:
    """The reranking stage's scorer: the cross-encoder at `model` (a path), else the linear model."""
    return CrossEncoderReranker(model) if model else LinearReranker()
