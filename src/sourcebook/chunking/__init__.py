"""Chunking: a parsed document becomes the chunks that are embedded, indexed and cited.

- `chunker.py`: structure-aware splitting within the embedding model's token budget, each
  chunk with its heading path and contextual prefix ("Title > Section").
- `sentences.py`: the sentence splitter the chunker, the windows, the extractive answerer
  and the citation checker share (one notion of "sentence" everywhere).
- `windows.py`: the two-sentence windows of a chunk that get vectors of their own.
"""

from .chunker import ChunkingError, TokenCounter, chunk_document, chunk_documents, make_prefix
from .sentences import Span, sentence_texts, split_sentences
from .windows import WINDOW_SENTENCES, window_spans, window_texts

__all__ = [
    "WINDOW_SENTENCES",
    "ChunkingError",
    "Span",
    "TokenCounter",
    "chunk_document",
    "chunk_documents",
    "make_prefix",
    "sentence_texts",
    "split_sentences",
    "window_spans",
    "window_texts",
]
