"""The usage table: model calls and requests per tenant, day and API key, the same SQL on both stores.

A row is (tenant, day, api_key) with one counter per `usage.USAGE_FIELDS`; each unit of work adds
its tally with one upsert, so concurrent writers (server threads, workers on other machines) sum
rather than overwrite. `api_key` is the key's id ("" for work no key asked for: the CLI, the
library). Days are UTC (`usage.today`).
"""

from __future__ import annotations

from ...usage import USAGE_FIELDS, UsageTally
from .base import SharedSql

_COLUMNS = ", ".join(USAGE_FIELDS)
_ADD = ", ".join(f"{name} = usage.{name} + excluded.{name}" for name in USAGE_FIELDS)


class SqlUsage(SharedSql):
    """The `UsageStore` role."""

    def record_usage(self, day: str, api_key: str, tally: UsageTally) -> None:
        if not tally:
            return
        counts = tally.counts()
        with self._writing() as sql:
            sql.execute(
                f"""INSERT INTO usage (tenant, day, api_key, {_COLUMNS})
                    VALUES (?, ?, ?, {", ".join("?" * len(USAGE_FIELDS))})
                    ON CONFLICT (tenant, day, api_key) DO UPDATE SET {_ADD}""",
                (self.tenant, day, api_key, *(counts[name] for name in USAGE_FIELDS)),
            )

    def usage(self, since: str | None = None, until: str | None = None) -> list[dict[str, int | str]]:
        with self._reading() as sql:
            rows = sql.execute(
                f"""SELECT day, api_key, {_COLUMNS} FROM usage
                    WHERE tenant = ? AND day >= ? AND day <= ? ORDER BY day, api_key""",
                (self.tenant, since or "0000-00-00", until or "9999-99-99"),
            ).fetchall()
        return [{"tenant": self.tenant, "day": row[0], "api_key": row[1],
                 **{name: int(value) for name, value in zip(USAGE_FIELDS, row[2:], strict=True)}} for row in rows]
