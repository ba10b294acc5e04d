"""The caches that spare re-ingestion a second LLM call: the same SQL on both stores.

`chunk_contexts` holds situating sentences (enrichment.py) and `graph_extractions` a
chunk's extracted entities and relations (graph/builder.py), each by the content hash of
the chunk and the generator or extractor that wrote it, per tenant.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..common import now
from .base import SharedSql
from .dialect import decoded


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
