"""`sourcebook graph`: build, browse and export the knowledge graph (README "Knowledge graph").

Every graph command reads documents that must already be there, so a knowledge base that
does not exist is an error (`graph build` on a new one could only build an empty graph).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.table import Table

from ..chunking import make_prefix
from ..graph.builder import GraphBuildReport
from ..graph.export import FORMATS
from ..graph.models import EntityRecord
from ..kb import ingested_ids
from ._common import JsonOpt, emit_json, err, examples, open_kb, out

if TYPE_CHECKING:
    from ..kb import KnowledgeBase
    from ..models import IngestResult

group = typer.Typer(
    help="The knowledge graph: build it, list, search and show entities, export it.",
    no_args_is_help=True,
    epilog=examples("sourcebook graph build", "sourcebook graph show harbor-db"),
)
TypeOpt = Annotated[Optional[str], typer.Option("--type", "-t", help="only entities of this type")]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", min=1, help="most entities to list")]


def build_after_add(kb: KnowledgeBase, results: list[IngestResult]) -> GraphBuildReport:
    """`add --graph`: the graph of the documents just added (unchanged ones are skipped if current)."""
    return kb.build_graph(ingested_ids(results))


def print_build(report: GraphBuildReport) -> None:
    usage = report.to_dict()["usage"]
    tokens = f"; {usage['input_tokens']} in / {usage['output_tokens']} out tokens" if report.calls else ""
    out.print(
        f"graph ({report.extractor}): {report.documents} documents built, {report.up_to_date} up to date; "
        f"{report.extracted} chunks extracted, {report.cached} from cache, {report.failed} failed{tokens}; "
        f"{report.stats.get('entities', 0)} entities, {report.stats.get('relations', 0)} relations",
        highlight=False,
    )
    for error in report.errors[:5]:
        err.print(f"[yellow]failed[/yellow] {error}", highlight=False)


@group.command(epilog=examples("sourcebook graph build", "sourcebook graph build DOC_ID --llm openai:gpt-4o-mini --force"))
def build(
    ctx: typer.Context,
    documents: Annotated[Optional[list[str]], typer.Argument(help="Document ids or sources (default: all).")] = None,
    collection: Annotated[Optional[str], typer.Option("--collection", "-c", help="Only this collection.")] = None,
    llm: Annotated[Optional[str], typer.Option("--llm", help="provider:model to extract with (default: graph_llm, llm)")] = None,
    extractor: Annotated[Optional[str], typer.Option("--extractor", help="auto, offline or llm")] = None,
    force: Annotated[bool, typer.Option("--force", help="rebuild documents whose graph is current too")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Extract entities and relations of the documents (chunks extracted before come from the cache)."""
    with open_kb(ctx, must_exist=True) as kb:
        report = kb.build_graph(documents, collection, llm=llm, extractor=extractor, force=force)
    if as_json:
        emit_json(report.to_dict())
    else:
        print_build(report)
    if report.failed:
        raise typer.Exit(1)


def _entity_table(entities: list[EntityRecord]) -> Table:
    table = Table("entity", "type", "mentions", "documents", "aliases", "summary")
    for e in entities:
        table.add_row(e.name, e.type, str(e.mentions), str(e.documents), ", ".join(e.aliases), e.summary)
    return table


def _list(ctx: typer.Context, query: str | None, type_: str | None, limit: int, offset: int, as_json: bool) -> None:
    with open_kb(ctx, must_exist=True) as kb:
        entities = kb.entities(query, type=type_, limit=limit, offset=offset)
        stats = kb.graph_stats()
    if as_json:
        emit_json({"entities": [e.to_dict() for e in entities], "graph": stats})
    elif entities:
        out.print(_entity_table(entities))
        out.print(f"[dim]{stats['entities']} entities, {stats['relations']} relations, {stats['documents']} documents[/dim]")
    else:
        out.print("No entities." + ("" if stats["documents"] else " Build the graph with `sourcebook graph build`."))


@group.command("list", epilog=examples("sourcebook graph list --limit 10", "sourcebook graph list --type code --json"))
def list_entities(
    ctx: typer.Context,
    type_: TypeOpt = None,
    limit: LimitOpt = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    as_json: JsonOpt = False,
) -> None:
    """List entities, most mentioned first."""
    _list(ctx, None, type_, limit, offset, as_json)


@group.command(epilog=examples("sourcebook graph search tide", "sourcebook graph search harbor --type code --json"))
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Part of an entity's name or alias.")],
    type_: TypeOpt = None,
    limit: LimitOpt = 20,
    as_json: JsonOpt = False,
) -> None:
    """Find entities whose name or alias contains QUERY."""
    _list(ctx, query, type_, limit, 0, as_json)


def _passage(chunk: Any) -> str:
    text = " ".join(chunk.text.split())
    return f"{make_prefix(chunk.title, chunk.heading_path)} — {chunk.source}\n    {text[:240]}{'…' if len(text) > 240 else ''}"


@group.command(epilog=examples("sourcebook graph show harbor-db", "sourcebook graph show DCP --neighbours 5 --json"))
def show(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="Entity name, alias or a unique part of one.")],
    neighbours: Annotated[int, typer.Option("--neighbours", "-n", min=0, help="most relations to show")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """An entity, the passages that mention it, and its neighbours with the passages supporting each relation."""
    with open_kb(ctx, must_exist=True) as kb:
        view = kb.entity(entity, neighbours=neighbours)
    if as_json:
        emit_json(view.to_dict())
        return
    e = view.entity
    aliases = f" (also {', '.join(e.aliases)})" if e.aliases else ""
    out.print(f"[bold]{e.name}[/bold]{aliases} · {e.type} · {e.mentions} mentions in {e.documents} documents",
              highlight=False)
    if e.summary:
        out.print(e.summary, highlight=False, markup=False)
    out.print("\n[bold]Passages[/bold]")
    for chunk in view.passages:
        out.print(f"- {_passage(chunk)}", highlight=False, markup=False)
    out.print("\n[bold]Neighbours[/bold]" if view.neighbours else "\nNo relations.")
    for n in view.neighbours:
        r = n.relation
        line = f"{e.name} —{r.relation}→ {r.target_name}" if n.outgoing else f"{r.source_name} —{r.relation}→ {e.name}"
        out.print(f"{line}  [dim](weight {r.weight:g})[/dim]", highlight=False)
        for chunk in n.passages[:2]:
            out.print(f"    {_passage(chunk)}", highlight=False, markup=False)


@group.command(epilog=examples("sourcebook graph export > graph.json", "sourcebook graph export --format graphml -o graph.graphml"))
def export(
    ctx: typer.Context,
    format: Annotated[str, typer.Option("--format", "-f", help=" or ".join(FORMATS))] = "json",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The JSON format on stdout (as --format json).")] = False,
) -> None:
    """Export the whole graph as JSON (nodes with mention counts, edges with their chunks) or GraphML.

    `--json`, which every command takes, asks for the JSON format on stdout here."""
    if as_json and (format != "json" or output is not None):
        raise typer.BadParameter("--json prints the JSON format on stdout: leave out --format and --output")
    with open_kb(ctx, must_exist=True) as kb:
        text = kb.export_graph(format)
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        output.write_text(text, encoding="utf-8")
        err.print(f"wrote {output}", highlight=False)
