"""The `sourcebook` command: a thin typer layer over `KnowledgeBase`.

This module only assembles `app` (the console script's entry point) from the command
groups, one module each: documents, query, reading, graph, eval, service, keys, store. What they
share (settings and opening, JSON output, the error handler) is in `_common`. Nothing
imports this module back, so there is no import cycle.

Human output goes through rich (tables, a progress bar on stderr); `--json` on every
command that prints a result (all but the servers `serve`, `mcp`, `worker` and `postgres stop`)
prints one machine-readable JSON document on stdout instead. Exit status: 0 success,
1 when a command failed (or any source of `add` failed), 2 for a bad option or argument.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated, Optional

import typer

from . import documents, graph, keys, query, reading, service, store
from .eval import group as eval_group
from ._common import CliState, SourcebookGroup, examples

app = typer.Typer(
    cls=SourcebookGroup,
    help="Sourcebook: add documents, search them, ask cited questions.\n\n"
         "Settings come from ./sourcebook.toml (or $SOURCEBOOK_CONFIG) and SOURCEBOOK_* variables, "
         "as in the Python API; --db and --tenant override them.",
    no_args_is_help=True,
    epilog=examples(
        "sourcebook add docs/",
        'sourcebook ask "How long is parental leave at full pay?"',
        "sourcebook COMMAND --help",
    ),
)
app.add_typer(documents.commands)
app.add_typer(query.commands)
app.add_typer(reading.commands)
app.add_typer(graph.group, name="graph", rich_help_panel="Knowledge graph")
app.add_typer(eval_group, name="eval", rich_help_panel="Evaluation")
app.add_typer(service.commands)
app.add_typer(keys.group, name="keys", rich_help_panel=service.PANEL)
app.add_typer(store.commands)
app.add_typer(store.postgres_group, name="postgres", rich_help_panel=store.PANEL)


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"sourcebook {version('sourcebook')}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    db: Annotated[
        Optional[str],
        typer.Option("--db", help="Knowledge base: a SQLite file or postgresql:// URL (else $SOURCEBOOK_DB, "
                                  "else db in sourcebook.toml, else ./sourcebook.db)."),
    ] = None,
    tenant: Annotated[
        Optional[str], typer.Option("--tenant", help="Tenant to act as (else $SOURCEBOOK_TENANT, else 'default').")
    ] = None,
    show_version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """The global options go into typer's context, where every command finds them."""
    ctx.obj = CliState(db, tenant)
