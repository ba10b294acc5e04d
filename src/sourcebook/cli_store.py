"""Database commands: `migrate`, `copy` and `postgres start|stop` (the embedded server).

Registered by cli.py; it reuses cli.py's helpers (opening, JSON errors), imported inside
the commands because cli.py imports this module while it is itself being imported.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .copying import copy_store
from .stores import open_store

out = Console()
err = Console(stderr=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]

postgres_app = typer.Typer(
    help="A local PostgreSQL server (with pgvector) for trying the Postgres store: no install, no root.",
    no_args_is_help=True,
)


def _database() -> str:
    from .cli import _State

    return _State.db or os.environ.get("SOURCEBOOK_DB") or "sourcebook.db"


def migrate(as_json: JsonOpt = False) -> None:
    """Bring the database's schema up to date (the store also does it when opened)."""
    from .cli import _emit_json, _errors

    with _errors(as_json):
        store = open_store(_database())
        try:
            stats = store.stats()
        finally:
            store.close()
    migration = getattr(store, "migration", None)
    applied = list(migration.applied) if migration is not None else []
    result = {"database": stats["path"], "schema_version": stats["schema_version"], "applied": applied}
    if as_json:
        _emit_json(result)
    else:
        done = f"applied {applied}" if applied else "nothing to apply"
        out.print(f"{result['database']}: schema version {result['schema_version']} ({done})", highlight=False)


def copy(
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
    from .cli import _emit_json, _errors

    with _errors(as_json):
        src = open_store(source)
        try:
            dst = open_store(target)
            try:
                columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
                with Progress(*columns, console=err, disable=as_json) as bar:
                    tasks: dict[str, int] = {}

                    def advance(name: str, done: int, total: int) -> None:
                        if name not in tasks:
                            tasks[name] = bar.add_task(f"tenant {name}", total=total)
                        bar.update(tasks[name], completed=done)

                    report = copy_store(src, dst, tenant or None, advance)
            finally:
                dst.close()
        finally:
            src.close()
    if as_json:
        _emit_json(asdict(report))
    else:
        out.print(
            f"copied {report.documents_copied} documents ({report.chunks_copied} chunks) and "
            f"{report.chat_sessions_copied} chat sessions of {len(report.tenants)} tenants; "
            f"{report.documents_unchanged} documents and {report.chat_sessions_unchanged} sessions were up to date",
            highlight=False,
        )


@postgres_app.command("start")
def postgres_start(
    directory: Annotated[Path, typer.Argument(help="Data directory (created on first start).")] = Path(".sourcebook-pg"),
    as_json: JsonOpt = False,
) -> None:
    """Start a server in DIRECTORY (kept running after this command) and print its DSN."""
    from .cli import _emit_json, _errors
    from .stores.postgres.embedded import EmbeddedPostgres

    with _errors(as_json):
        server = EmbeddedPostgres.start(directory, keep_running=True)
        dsn = server.ensure_database("sourcebook")
    if as_json:
        _emit_json({"dsn": dsn, "directory": str(server.directory)})
    else:
        out.print(dsn, highlight=False, soft_wrap=True)
        err.print(f"use it as: sourcebook --db '{dsn}' add ...; stop with: sourcebook postgres stop {directory}")


@postgres_app.command("stop")
def postgres_stop(
    directory: Annotated[Path, typer.Argument(help="The data directory given to start.")] = Path(".sourcebook-pg"),
) -> None:
    """Stop the server running in DIRECTORY (its data stays for the next start)."""
    from .stores.postgres.embedded import stop_directory

    out.print("stopped" if stop_directory(directory) else f"no server was running in {directory}")

