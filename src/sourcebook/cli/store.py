"""Database commands: `migrate`, `compact`, `copy`, `usage` and `postgres start|stop` (the embedded server).

No model is loaded. `migrate` and copy's TARGET create the database; copy's SOURCE and
compact's knowledge base must exist.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..usage import USAGE_FIELDS
from ._common import (
    JsonOpt,
    check_database,
    emit_json,
    err,
    examples,
    open_kb,
    out,
    progress_bar,
    require_extra,
)

PANEL = "Database"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
commands = typer.Typer()
postgres_group = typer.Typer(
    help="A local PostgreSQL server (with pgvector) for trying the Postgres store: no install, no root.",
    no_args_is_help=True,
    epilog=examples("sourcebook postgres start", "sourcebook postgres stop"),
)


@commands.command(rich_help_panel=PANEL, epilog=examples("sourcebook --db kb.db migrate", "sourcebook --db postgresql://localhost/kb migrate --json"))
def migrate(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Bring the database's schema up to date (the store also does it when opened)."""
    with open_kb(ctx, must_exist=False) as kb:
        stats = kb.status()
        applied = list(kb.applied_migrations())
    result = {"database": stats["path"], "schema_version": stats["schema_version"], "applied": applied}
    if as_json:
        emit_json(result)
    else:
        done = f"applied {applied}" if applied else "nothing to apply"
        out.print(f"{result['database']}: schema version {result['schema_version']} ({done})", highlight=False)


@commands.command(rich_help_panel=PANEL, epilog=examples("sourcebook compact", "sourcebook --db kb.db compact --json"))
def compact(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Drop cached graph extractions, chunk contexts, summaries and terms nothing stored uses, and reclaim the space.

    Removing a document keeps them on purpose (adding it back costs no LLM call); this is
    how to let them go."""
    with open_kb(ctx, must_exist=True) as kb:
        dropped = kb.compact()
    if as_json:
        emit_json(dropped)
        return
    out.print(
        f"dropped {dropped['graph_extractions']} graph extractions, {dropped['chunk_contexts']} chunk contexts, "
        f"{dropped['summaries']} summaries, {dropped['terms']} terms; {dropped['size_bytes_before']:,} -> {dropped['size_bytes_after']:,} bytes",
        highlight=False,
    )


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook copy kb.db postgresql://localhost/kb",
    "sourcebook copy postgresql://localhost/kb acme.db --tenant acme --json",
))
def copy(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="Knowledge base to read: SQLite path or postgresql:// URL.")],
    target: Annotated[str, typer.Argument(help="Knowledge base to write (created if missing).")],
    tenant: Annotated[
        Optional[list[str]], typer.Option("--tenant", "-t", help="Copy only this tenant (repeatable); default: all.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy documents, chunks, vectors and chat sessions to another store, without re-embedding.

    Run it again to copy only what changed since.
    """
    check_database(target, must_exist=False)
    with open_kb(ctx, must_exist=True, db=source, origin="SOURCE") as kb, progress_bar(disable=as_json) as bar:
        tasks: dict[str, int] = {}

        def advance(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(f"tenant {name}", total=total)
            bar.update(tasks[name], completed=done)

        report = kb.copy_to(target, tenant or None, advance)
    if as_json:
        emit_json(asdict(report))
    else:
        out.print(
            f"copied {report.documents_copied} documents ({report.chunks_copied} chunks) and "
            f"{report.chat_sessions_copied} chat sessions of {len(report.tenants)} tenants; "
            f"{report.documents_unchanged} documents and {report.chat_sessions_unchanged} sessions were up to date",
            highlight=False,
        )


@postgres_group.command("start", epilog=examples("sourcebook postgres start", "sourcebook postgres start /data/pg --json"))
def postgres_start(
    directory: Annotated[Path, typer.Argument(help="Data directory (created on first start).")] = Path(".sourcebook-pg"),
    as_json: JsonOpt = False,
) -> None:
    """Start a server in DIRECTORY (kept running after this command) and print its DSN."""
    require_extra("`sourcebook postgres start`", "postgres")
    from ..stores.postgres.embedded import EmbeddedPostgres

    server = EmbeddedPostgres.start(directory, keep_running=True)
    dsn = server.ensure_database("sourcebook")
    if as_json:
        emit_json({"dsn": dsn, "directory": str(server.directory)})
    else:
        out.print(dsn, highlight=False, soft_wrap=True)
        err.print(f"use it as: sourcebook --db '{dsn}' add ...; stop with: sourcebook postgres stop {directory}")


@postgres_group.command("stop", epilog=examples("sourcebook postgres stop", "sourcebook postgres stop /data/pg"))
def postgres_stop(
    directory: Annotated[Path, typer.Argument(help="The data directory given to start.")] = Path(".sourcebook-pg"),
) -> None:
    """Stop the server running in DIRECTORY (its data stays for the next start)."""
    require_extra("`sourcebook postgres stop`", "postgres")
    from ..stores.postgres.embedded import stop_directory

    out.print("stopped" if stop_directory(directory) else f"no server was running in {directory}")


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook usage", "sourcebook --tenant acme usage --since 2026-11-01 --json",
))
def usage(
    ctx: typer.Context,
    since: Annotated[Optional[str], typer.Option("--since", help="First UTC day (YYYY-MM-DD).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Last UTC day (YYYY-MM-DD).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The tenant's requests, LLM calls and tokens, and embedding calls, by day and API key.

    Counted by the HTTP service per request and by the ingestion runners per job ("" is work no
    key asked for); what quotas read (SOURCEBOOK_SERVER_QUOTA_*)."""
    for day in (since, until):
        if day is not None and not _DAY.fullmatch(day):
            raise typer.BadParameter(f"{day!r} is not a day: use YYYY-MM-DD")
    with open_kb(ctx, must_exist=True) as kb:
        rows = kb.usage(since, until)
        tenant = kb.tenant
    if as_json:
        emit_json({"tenant": tenant, "usage": rows})
        return
    if not rows:
        out.print(f"No usage recorded for tenant {tenant}.")
        return
    table = Table(title=f"Usage of tenant {tenant}")
    for column in ("day", "api key", *(name.replace("_", " ") for name in USAGE_FIELDS)):
        table.add_column(column, justify="left" if column in ("day", "api key") else "right")
    for row in rows:
        table.add_row(str(row["day"]), str(row["api_key"]) or "-", *(f"{row[name]:,}" for name in USAGE_FIELDS))
    out.print(table)
