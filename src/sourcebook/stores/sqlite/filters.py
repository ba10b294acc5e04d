"""Search filters as SQL on the SQLite store: which of the tenant's documents a search may return.

Both searches (and the graph's entity chunks) restrict by `allowed_documents`, so they
agree by construction; metadata equality compares JSON types too (True never equals 1).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ...errors import InvalidQueryError
from ...models import SearchFilter
from ..common import query_dimension_mismatch


def _filter_sql(tenant: str, filters: SearchFilter) -> tuple[str, list[Any]]:
    """A WHERE condition on `documents d` for the tenant and filters (one place, so both searches agree)."""
    conditions: list[str] = ["d.tenant = ?"]
    params: list[Any] = [tenant]
    for column, values in (("d.collection", filters.collections), ("d.id", filters.document_ids)):
        if values:
            # One JSON parameter instead of one per value: no limit on the list's length.
            conditions.append(f"{column} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(values)))
    for key, value in filters.metadata:
        condition, condition_params = _metadata_condition(key, value)
        conditions.append(condition)
        params.extend(condition_params)
    return " AND ".join(conditions), params


def _metadata_condition(key: str, value: Any) -> tuple[str, list[Any]]:
    """Equality on one metadata field; JSON types are compared too, so True never equals 1."""
    if not key or '"' in key or "\x00" in key:
        raise InvalidQueryError(f"metadata filter key {key!r} must be non-empty and contain no double quote or NUL")
    path = f'$."{key}"'
    if isinstance(value, bool):
        return "json_type(d.metadata, ?) = ?", [path, "true" if value else "false"]
    if isinstance(value, int | float):
        return "json_type(d.metadata, ?) IN ('integer', 'real') AND json_extract(d.metadata, ?) = ?", [path, path, value]
    if isinstance(value, str):
        return "json_type(d.metadata, ?) = 'text' AND json_extract(d.metadata, ?) = ?", [path, path, value]
    raise InvalidQueryError(
        f"metadata filter {key!r} has a {type(value).__name__} value; use a string, number or boolean"
    )


def allowed_documents(conn: sqlite3.Connection, tenant: str, filters: SearchFilter) -> list[str] | None:
    """Ids of the tenant's documents passing `filters`, or None when every one of them passes
    (the in-memory indexes hold only the tenant's chunks).

    Both searches restrict by this list, so they agree by construction; None (no filter,
    or a collection filter on a one-collection store, the common case) skips the work.
    """
    if not (filters.collections or filters.document_ids or filters.metadata):
        return None
    where, params = _filter_sql(tenant, filters)
    allowed = [row[0] for row in conn.execute(f"SELECT d.id FROM documents d WHERE {where}", params)]
    total = conn.execute("SELECT count(*) FROM documents WHERE tenant = ?", (tenant,)).fetchone()[0]
    return None if len(allowed) == total else allowed


def check_query_dimension(conn: sqlite3.Connection, tenant: str, collections: Sequence[str], dimension: int) -> None:
    if not collections:
        return
    wrong = conn.execute(
        """SELECT name, dimension FROM collections
           WHERE tenant = ? AND name IN (SELECT value FROM json_each(?)) AND dimension != ?""",
        (tenant, json.dumps(list(collections)), dimension),
    ).fetchall()
    if wrong:
        name, expected = wrong[0]
        raise query_dimension_mismatch(name, expected, dimension)

