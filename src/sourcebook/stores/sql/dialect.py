"""The one place where SQLite and Postgres SQL differ for the statements both stores share.

The shared statements (stores/sql/*.py) are written once, with `?` placeholders, in the
subset both engines run (ON CONFLICT, RETURNING, explicit ``tenant`` columns: Postgres
checks them against its row-level security too). What still differs is spelled by a
`Dialect`: the placeholder style, how a list parameter is matched, how values are
aggregated into a list, and the collation that orders text by code point. Values read
back are normalised by `iso` and `decoded`, so both stores return the same records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Dialect:
    """How one engine spells the few things the shared statements cannot say alike."""

    name: str
    pyformat: bool
    """Placeholders are `%s` (psycopg) rather than `?` (sqlite3)."""
    collate: str
    """Appended to an ORDER BY term so text sorts by code point (SQLite's default already does)."""
    any_of_sql: str
    """`{column}` matching any value of one list parameter (bound with `values`)."""
    list_agg_sql: str
    """`{expr}` aggregated into a list (read back with `decoded`)."""
    no_limit: int | None
    """The LIMIT parameter that means "no limit" (SQLite: -1; Postgres: NULL)."""

    def sql(self, query: str) -> str:
        """`query`, written with `?` placeholders, in this engine's placeholder style."""
        return query.replace("%", "%%").replace("?", "%s") if self.pyformat else query

    def any_of(self, column: str) -> str:
        return self.any_of_sql.format(column=column)

    def list_agg(self, expr: str) -> str:
        return self.list_agg_sql.format(expr=expr)

    def limit(self, limit: int | None) -> int | None:
        return self.no_limit if limit is None else limit

    def values(self, items: Iterable[Any]) -> Any:
        """The parameter `any_of` matches: one JSON text for SQLite (no limit on its length), a list for Postgres."""
        listed = list(items)
        return listed if self.pyformat else json.dumps(listed)


SQLITE = Dialect(
    name="sqlite",
    pyformat=False,
    collate="",
    any_of_sql="{column} IN (SELECT value FROM json_each(?))",
    list_agg_sql="json_group_array({expr})",
    no_limit=-1,
)
POSTGRES = Dialect(
    name="postgres",
    pyformat=True,
    collate=' COLLATE "C"',
    any_of_sql="{column} = ANY(?::text[])",
    list_agg_sql="array_agg({expr})",
    no_limit=None,
)


class Sql:
    """A connection inside the caller's transaction, running shared `?`-placeholder SQL."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def execute(self, query: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement; returns the driver's cursor (fetchone, fetchall, rowcount)."""
        return self.conn.execute(self.dialect.sql(query), tuple(params))

    def executemany(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self.dialect.pyformat:
            with self.conn.cursor() as cursor:
                cursor.executemany(self.dialect.sql(query), rows)
        else:
            self.conn.executemany(query, rows)


def iso(value: str | datetime) -> str:
    """A stored timestamp as ISO 8601 text in UTC (SQLite keeps the text; Postgres a timestamptz)."""
    return value if isinstance(value, str) else value.astimezone(UTC).isoformat()


def decoded(value: Any) -> Any:
    """A stored JSON value or list: SQLite hands back its JSON text, Postgres the decoded value."""
    return json.loads(value) if isinstance(value, str) else value
