"""The reading commands: summarize (a document or a collection) and related (more like this)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..answering.summaries import DEFAULT_SENTENCES
from ..locations import cited_as
from ..models import RelatedDocument, Summary
from ._common import CollectionOpt, JsonOpt, emit_json, examples, open_kb, out
from .query import PANEL, LlmOpt

commands = typer.Typer()


def print_summary(summary: Summary) -> None:
    """The summary, its sources, and what the citation check left out."""
    out.print(f"[bold]{escape(summary.title)}[/bold]")
    out.print(summary.summary, highlight=False, markup=False)
    if summary.citations:
        out.print("\n[bold]Sources[/bold]")
        for n in dict.fromkeys(c.n for c in summary.citations):
            c = next(c for c in summary.citations if c.n == n)
            out.print(f"[{n}] {cited_as(c.title, c.location)} — {c.source}", highlight=False, markup=False)
    check = summary.citation_check
    if check is not None:
        for sentence in check.sentences:
            if sentence.status != "supported":
                out.print(f"[yellow]  left out ({sentence.status}):[/yellow] {escape(sentence.text)}", highlight=False)
    cached = " · from the cache" if summary.cached else ""
    out.print(f"\n[dim]{summary.summarizer}{cached}[/dim]")


def related_table(documents: list[RelatedDocument]) -> Table:
    table = Table("score", "title", "collection", "source")
    for document in documents:
        table.add_row(f"{document.score:.3f}", document.title, document.collection, document.source)
    return table


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook summarize docs/employee-handbook.md",
    "sourcebook summarize --collection hr --json",
    "sourcebook summarize 58faf418c3eab6bb --llm anthropic:claude-sonnet-4-5",
))
def summarize(
    ctx: typer.Context,
    document: Annotated[Optional[str], typer.Argument(help="A document id, or its source as given to `add`.")] = None,
    collection: CollectionOpt = None,
    llm: LlmOpt = None,
    sentences: Annotated[int, typer.Option("--sentences", min=1, max=50, help="most sentences")] = DEFAULT_SENTENCES,
    refresh: Annotated[bool, typer.Option("--refresh", help="summarize anew instead of reading the cache")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Summarize a document (or, with only --collection, a collection), citing every sentence.

    Without an LLM the summary is the sentences that best cover the document's sections; with
    one it is written part by part and checked like an answer. Summaries are cached until the
    document changes."""
    if document is None and collection is None:
        raise typer.BadParameter("name a DOCUMENT, or a collection with --collection")
    with open_kb(ctx, must_exist=True) as kb:
        if document is None:
            assert collection is not None
            summary = kb.summarize_collection(collection, llm=llm, sentences=sentences, refresh=refresh)
        else:
            summary = kb.summarize(document, collection, llm=llm, sentences=sentences, refresh=refresh)
    if as_json:
        emit_json(summary.to_dict())
    else:
        print_summary(summary)


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook related docs/employee-handbook.md",
    "sourcebook related 58faf418c3eab6bb --in hr --in policies --json",
    "sourcebook related --chunk 58faf418c3eab6bb#3",
))
def related(
    ctx: typer.Context,
    document: Annotated[Optional[str], typer.Argument(help="A document id, or its source as given to `add`.")] = None,
    chunk: Annotated[Optional[str], typer.Option("--chunk", help="documents like this chunk instead")] = None,
    collection: CollectionOpt = None,
    within: Annotated[
        Optional[list[str]], typer.Option("--in", help="only documents of this collection (repeat); default: all")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100)] = 5,
    as_json: JsonOpt = False,
) -> None:
    """Documents most like a document (or a chunk): more like this, the document itself left out."""
    if (document is None) == (chunk is None):
        raise typer.BadParameter("name a DOCUMENT or a --chunk, not both")
    with open_kb(ctx, must_exist=True) as kb:
        if chunk is not None:
            documents = kb.related_to_chunk(chunk, top_k=top_k, collections=within)
        else:
            assert document is not None
            documents = kb.related(document, collection, top_k=top_k, collections=within)
    if as_json:
        emit_json({"documents": [d.to_dict() for d in documents]})
    elif documents:
        out.print(related_table(documents))
    else:
        out.print("No related documents.")
