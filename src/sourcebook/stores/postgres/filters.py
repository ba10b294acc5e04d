"""Search filters as SQL on the Postgres store: AND-conditions on `chunks c`.

No condition names the tenant: row-level security scopes every table read. Metadata
equality is jsonb containment, which compares JSON types (true is not 1) and numbers
by value (2021 = 2021.0), as the SQLite store's json_type checks do.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ...errors import InvalidQueryError
from ...models import SearchFilter


def filter_sql(filters: SearchFilter) -> tuple[str, list[Any]]:
    """AND-conditions on `chunks c` for the filters (one place, so both searches agree)."""
    conditions: list[str] = []
    params: list[Any] = []
    if filters.collections:
        conditions.append("c.collection = ANY(%s)")
        params.append(list(filters.collections))
    if filters.document_ids:
        conditions.append("c.document_id = ANY(%s)")
        params.append(list(filters.document_ids))
    if filters.metadata:
        for key, value in filters.metadata:
            if not key or "\x00" in key:
                raise InvalidQueryError(f"metadata filter key {key!r} must be non-empty and hold no NUL character")
            if not isinstance(value, (str, int, float, bool)) or (isinstance(value, float) and not math.isfinite(value)):
                raise InvalidQueryError(
                    f"metadata filter {key!r} has a {type(value).__name__} value; use a string, finite number or boolean"
                )
        if any(isinstance(value, str) and "\x00" in value for _, value in filters.metadata):
            conditions.append("false")  # stored metadata (jsonb) cannot hold NUL: nothing matches
        else:
            # jsonb containment compares JSON types (true is not 1) and numbers by value (2021 = 2021.0).
            conditions.append(
                "EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id AND d.metadata @> %s::jsonb)"
            )
            params.append(json.dumps(dict(filters.metadata)))
    return "".join(f" AND {condition}" for condition in conditions), params
