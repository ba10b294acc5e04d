"""The summary cache: the same SQL on both stores.

A summary (answering/summaries.py) costs an LLM call per section of a document, so it is kept
by its subject (a document id, or ``collection:NAME``) and the summarizer that wrote it
("extractive:..." or "provider:model"), together with the content hash it was made from. A
read names the subject's current hash: a document changed since is a miss, and the next write
replaces the stale row, so a summary never outlives the text it cites.

Deleting a document leaves its row (cheap, and `compact` drops it: `drop_unused_summaries`).
"""

from __future__ import annotations

import json
from typing import Any

from ..common import now
from .base import SharedSql
from .dialect import Sql, decoded

COLLECTION_SUBJECT = "collection:"
"""The prefix of a collection summary's subject (document ids never contain a colon)."""


class SqlSummaryCache(SharedSql):
    """The `SummaryCache` role."""

    def get_summary(self, subject: str, content_hash: str, summarizer: str) -> dict[str, Any] | None:
        with self._reading() as sql:
            row = sql.execute(
                """SELECT data FROM summaries
                   WHERE tenant = ? AND subject = ? AND summarizer = ? AND content_hash = ?""",
                (self.tenant, subject, summarizer, content_hash),
            ).fetchone()
        return None if row is None else decoded(row[0])

    def put_summary(self, subject: str, content_hash: str, summarizer: str, data: dict[str, Any]) -> None:
        with self._writing() as sql:
            sql.execute(
                """INSERT INTO summaries (tenant, subject, summarizer, content_hash, data, created_at)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (tenant, subject, summarizer)
                   DO UPDATE SET content_hash = excluded.content_hash, data = excluded.data,
                                 created_at = excluded.created_at""",
                (self.tenant, subject, summarizer, content_hash, json.dumps(data), now()),
            )


def drop_unused_summaries(sql: Sql, tenant: str) -> int:
    """Delete the tenant's summaries of documents and collections that no longer exist; how many went."""
    return int(sql.execute(
        """DELETE FROM summaries WHERE tenant = ?
           AND subject NOT IN (SELECT id FROM documents WHERE tenant = ?)
           AND subject NOT IN (SELECT CAST(? AS text) || name FROM collections WHERE tenant = ?)""",
        (tenant, tenant, COLLECTION_SUBJECT, tenant),
    ).rowcount)
