"""Contextual chunk enrichment (Anthropic's Contextual Retrieval), optional and off by default.

A chunk cut from a document often lacks what makes it findable ("The limit is £45." -- a
limit of what?). At ingestion an LLM reads the document and writes one sentence situating
each chunk; the sentence joins the chunk's deterministic "Title > Section" prefix, so it is
embedded with the chunk (the keyword index keeps title, section and text as before).

Sentences are cached in the store by the plain chunk's content hash and the generator, so
re-ingesting a changed document pays only for its new chunks. A failed call leaves that
chunk with the deterministic prefix (and uncached, so the next ingestion tries again):
enrichment may improve retrieval, never block ingestion. The chunker keeps
`RESERVE_TOKENS` free for the sentence, so the embedding model still reads the whole chunk.
"""

from __future__ import annotations

from dataclasses import replace

from .answering.prompts import enrich_request
from .errors import GeneratorError
from .generators import Generator
from .models import Chunk, ParsedDocument
from .stores.base import ContextCache

RESERVE_TOKENS = 48
SENTENCE_CHARS = 160  # about RESERVE_TOKENS word pieces of English
DOCUMENT_CHARS = 24_000  # the document text the LLM reads per call; longer ones are cut


def _one_sentence(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= SENTENCE_CHARS:
        return line
    return line[:SENTENCE_CHARS].rsplit(" ", 1)[0] + "…"


class ContextualEnricher:
    reserve_tokens = RESERVE_TOKENS

    def __init__(self, generator: Generator, store: ContextCache) -> None:
        self._generator = generator
        self._store = store

    def __call__(self, document: ParsedDocument, chunks: list[Chunk]) -> list[Chunk]:
        hashes = [chunk.content_hash for chunk in chunks]
        contexts = self._store.get_chunk_contexts(hashes, self._generator.spec)
        written: dict[str, str] = {}
        text = document.text[:DOCUMENT_CHARS]
        for chunk, key in zip(chunks, hashes, strict=True):
            if key in contexts or key in written:
                continue
            try:
                sentence = _one_sentence(self._generator.generate(enrich_request(document.title, text, chunk.text)).text)
            except GeneratorError:
                continue
            if sentence:
                written[key] = sentence
        if written:
            self._store.put_chunk_contexts(written, self._generator.spec)
        contexts |= written
        return [
            replace(chunk, prefix=f"{chunk.prefix}\n{contexts[key]}" if chunk.prefix else contexts[key])
            if key in contexts else chunk
            for chunk, key in zip(chunks, hashes, strict=True)
        ]
