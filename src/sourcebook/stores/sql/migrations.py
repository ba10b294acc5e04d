"""A named schema migration, the unit both stores' schema.py list in order.

As in sqlite-utils' migrations, a database's schema version is the number of migrations
applied, so the list only ever grows at its end; the name says what a step is for (in
tracebacks and in Postgres's ``schema_migrations`` table), the version where it stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Step = str | Callable[[Any], None]
"""One SQL statement, or a function of the connection for what SQL alone cannot do
(backfilling derived rows)."""


@dataclass(frozen=True)
class Migration:
    name: str
    steps: tuple[Step, ...]
    about: str = ""
    """Why the step exists (Postgres records it beside the version)."""

    def apply(self, conn: Any) -> None:
        """Run the steps on `conn`, inside the caller's transaction."""
        for step in self.steps:
            if callable(step):
                step(conn)
            else:
                conn.execute(step)


@dataclass(frozen=True)
class MigrationReport:
    """What opening a database did to its schema: the versions it applied (empty when the
    schema was current), for `sourcebook migrate` to report."""

    applied: tuple[int, ...]
    version: int
