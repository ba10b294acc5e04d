"""The caches that spare re-ingestion a second LLM call: the same SQL on both stores.

`chunk_contexts` holds situating sentences (enrichment.py) and `graph_extractions` a
chunk's extracted entities and relations (graph/builder.py), each by the content hash of
the chunk and the generator or extractor that wrote it, per tenant.

Deleting or changing a document leaves its cache rows (re-adding it should not pay the LLM
again); `drop_unused_caches` is what `Store.compact` runs to drop those no stored chunk
can use any more (and the summaries of documents and collections that are gone, sql/summaries.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...models import sha256_text
from ..common import now
from .base import SharedSql
from .dialect import Sql, decoded
from .summaries import drop_unused_summaries

_TENANT_CHUNKS = "FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.tenant = ?"


class SqlContextCache(SharedSql):
    """The `ContextCache` role."""

    def get_chunk_contexts(self, chunk_hashes: Sequence[str], generator: str) -> dict[str, str]:
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT chunk_hash, context FROM chunk_contexts
                    WHERE tenant = ? AND generator = ? AND {sql.dialect.any_of("chunk_hash")}""",
                (self.tenant, generator, sql.dialect.values(dict.fromkeys(chunk_hashes))),
            ).fetchall()
        return dict(rows)

    def put_chunk_contexts(self, contexts: dict[str, str], generator: str) -> None:
        stamp = now()
        with self._writing() as sql:
            sql.executemany(
                """INSERT INTO chunk_contexts (tenant, chunk_hash, generator, context, created_at)
                   VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (tenant, chunk_hash, generator) DO UPDATE SET context = excluded.context""",
                [(self.tenant, h, generator, context, stamp) for h, context in contexts.items()],
            )


class SqlExtractionCache(SharedSql):
    """The extraction cache of the `GraphStore` role."""

    def get_graph_extractions(self, chunk_hashes: Sequence[str], extractor: str) -> dict[str, dict[str, Any]]:
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT chunk_hash, data FROM graph_extractions
                    WHERE tenant = ? AND extractor = ? AND {sql.dialect.any_of("chunk_hash")}""",
                (self.tenant, extractor, sql.dialect.values(dict.fromkeys(chunk_hashes))),
            ).fetchall()
        return {chunk_hash: decoded(data) for chunk_hash, data in rows}

    def put_graph_extractions(self, extractions: dict[str, dict[str, Any]], extractor: str) -> None:
        stamp = now()
        with self._writing() as sql:
            sql.executemany(
                """INSERT INTO graph_extractions (tenant, chunk_hash, extractor, data, created_at) VALUES (?, ?, ?, ?, ?)
                   ON CONFLICT (tenant, chunk_hash, extractor) DO UPDATE SET data = excluded.data""",
                [(self.tenant, h, extractor, json.dumps(data), stamp) for h, data in extractions.items()],
            )


def drop_unused_caches(sql: Sql, tenant: str) -> dict[str, int]:
    """Delete the tenant's cache rows no stored chunk uses; how many of each went.

    An extraction is keyed by the stored chunk's own hash (graph/builder.py). A situating
    sentence is keyed by the hash of the chunk before enrichment added it to the prefix, so
    a stored chunk may use the row keyed by its own hash or by its hash without the prefix's
    last line (the sentence, one line: enrichment.py)."""
    extractions = sql.execute(
        f"DELETE FROM graph_extractions WHERE tenant = ? AND chunk_hash NOT IN (SELECT c.content_hash {_TENANT_CHUNKS})",
        (tenant, tenant),
    ).rowcount
    live: set[str] = set()
    for content_hash, prefix, text in sql.execute(f"SELECT c.content_hash, c.prefix, c.text {_TENANT_CHUNKS}", (tenant,)):
        plain_prefix = prefix.rsplit("\n", 1)[0] if "\n" in prefix else ""
        live.update((content_hash, sha256_text(f"{plain_prefix}\n{text}" if plain_prefix else text)))
    cached = {row[0] for row in sql.execute("SELECT chunk_hash FROM chunk_contexts WHERE tenant = ?", (tenant,))}
    unused = cached - live
    if unused:
        sql.execute(
            f"DELETE FROM chunk_contexts WHERE tenant = ? AND {sql.dialect.any_of('chunk_hash')}",
            (tenant, sql.dialect.values(sorted(unused))),
        )
    return {"graph_extractions": int(extractions), "chunk_contexts": len(unused),
            "summaries": drop_unused_summaries(sql, tenant)}
