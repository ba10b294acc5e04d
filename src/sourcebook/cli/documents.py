"""The documents commands: add, sync, watch, refresh, list, show, remove, status."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Column, Table

from ..kb import DEFAULT_COLLECTION
from ..models import DocumentStatus, IngestResult
from ..profiling import Profile, profiled
from ..watching import FolderChange, FolderWatcher
from ._common import CollectionOpt, JsonOpt, emit_json, err, examples, ingest_progress, open_kb, out, parse_meta
from .graph import build_after_add, print_build

PANEL = "Documents"
commands = typer.Typer()


def _report_ingest(results: list[IngestResult], as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """Print the results (see `_print_ingest`); exit 1 when any failed."""
    if _print_ingest(results, as_json, extra):
        raise typer.Exit(1)


def _print_ingest(results: list[IngestResult], as_json: bool, extra: dict[str, Any] | None = None) -> bool:
    """Each failure on stderr and a summary line (or one JSON document); True when any failed."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.action] = counts.get(r.action, 0) + 1
    if as_json:
        emit_json({"results": [r.to_dict() for r in results], "summary": counts, **(extra or {})})
    else:
        for r in results:
            if r.action == "failed":
                err.print(f"[red]failed[/red] {r.error}", highlight=False)
        summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or "nothing to do"
        embedded = sum(r.embedded for r in results)
        out.print(f"{summary}; {embedded} chunks embedded")
    return bool(counts.get("failed"))


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook add docs/ https://example.org/page.html",
    "sourcebook --db kb.db add corpus.jsonl --format beir --meta team=people",
))
def add(
    ctx: typer.Context,
    sources: Annotated[list[str], typer.Argument(help="Files, folders or http(s) URLs.")],
    collection: CollectionOpt = None,
    format: Annotated[str, typer.Option("--format", help="'auto', or 'beir' for a BEIR corpus.jsonl")] = "auto",
    meta: Annotated[Optional[list[str]], typer.Option("--meta", help="key=value metadata for every document")] = None,
    graph: Annotated[bool, typer.Option("--graph", help="also build their knowledge graph (see `graph build`)")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="on Postgres, wait for the queued jobs")] = True,
    profile: Annotated[bool, typer.Option(
        "--profile", help="print where the time went: open, load, chunk, tokenize, model, write (this process only)",
    )] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add documents (new or changed ones only) to the knowledge base, creating it if needed."""
    metadata = parse_meta(meta)
    started = time.perf_counter()
    with open_kb(ctx, must_exist=False) as kb, ingest_progress(err.is_terminal) as progress:
        if profile:
            kb.embedder  # noqa: B018 -- loads the model now, so "open" holds its load and "model" does not
        opened, opened_cpu = time.perf_counter(), time.process_time()
        with profiled() as stages:
            results = kb.add(
                sources, collection or DEFAULT_COLLECTION, metadata=metadata, format=format, progress=progress, wait=wait
            )
        added, added_cpu = time.perf_counter(), time.process_time()
        report = build_after_add(kb, results) if graph else None
    if report is not None and not as_json:
        print_build(report)
    extra: dict[str, Any] = {"graph": report.to_dict()} if report else {}
    if profile:
        timing = {"open_seconds": opened - started, "add_seconds": added - opened, "add_cpu_seconds": added_cpu - opened_cpu}
        if as_json:
            extra["profile"] = {**timing, **stages.to_dict()}
        else:
            _print_profile(stages, timing)
    _report_ingest(results, as_json, extra or None)


def _print_profile(stages: Profile, timing: dict[str, float]) -> None:
    """The stages' seconds and shares on stderr. They overlap (the model runs in a worker thread
    beside load, chunk and write), so their sum can exceed the wall time of `add`."""
    table = Table("stage", Column("seconds", justify="right"), Column("share", justify="right"), title="add --profile")
    for name, seconds, share in stages.rows():
        table.add_row(name, f"{seconds:.2f}", f"{share:.1%}")
    table.add_row("open (model load)", f"{timing['open_seconds']:.2f}", "")
    table.add_row("add, wall", f"{timing['add_seconds']:.2f}", "")
    table.add_row("add, CPU (all threads)", f"{timing['add_cpu_seconds']:.2f}", "")
    err.print(table)
    padding = stages.padding()
    if padding is not None:
        err.print(f"model input: {padding:.3f} computed tokens per real token (padding)", highlight=False)


@commands.command(rich_help_panel=PANEL, epilog=examples("sourcebook sync docs/", "sourcebook sync handbook/ -c people --json"))
def sync(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder to mirror.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add new and changed files of DIRECTORY, remove documents whose files are gone."""
    with open_kb(ctx, must_exist=False) as kb, ingest_progress(err.is_terminal) as progress:
        results = kb.sync(directory, collection or DEFAULT_COLLECTION, progress=progress)
    _report_ingest(results, as_json)


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook watch docs/", "sourcebook watch handbook/ -c people --json",
))
def watch(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder to keep in sync.")],
    collection: CollectionOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print each change as one JSON line on stdout.")] = False,
) -> None:
    """Sync DIRECTORY, then keep the collection in sync as its files change (one line per change) until Ctrl-C."""
    def report(change: FolderChange) -> None:
        if as_json:
            emit_json(change.to_dict())
            sys.stdout.flush()
        else:
            (err if change.action == "failed" else out).print(change.line(), highlight=False, markup=False)

    with open_kb(ctx, must_exist=False) as kb:
        watcher = FolderWatcher(kb, str(directory), collection or DEFAULT_COLLECTION, report)
        if not as_json:
            err.print(f"watching {watcher.root} (collection {watcher.collection}); Ctrl-C stops", highlight=False)
        logging.getLogger("watchfiles").setLevel(logging.ERROR)  # its own "stopping" notice: ours follows
        try:
            watcher.run()
        except KeyboardInterrupt:  # during a batch; watchfiles ends quietly on one between batches
            pass
    if not as_json:
        err.print("stopped", highlight=False)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _interval(text: str | None) -> float | None:
    """"90s", "15m", "1h", "1d" (or bare seconds) as seconds; None stays None (run once)."""
    if text is None:
        return None
    number, unit = (text[:-1], text[-1].lower()) if text[-1:].lower() in _UNITS else (text, "s")
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise typer.BadParameter(f"{text!r} is no interval: use a number with s, m, h or d, e.g. 1h") from None
    if not seconds > 0:
        raise typer.BadParameter(f"{text!r}: the interval must be positive")
    return seconds


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook refresh", "sourcebook refresh --every 1h --json", "sourcebook refresh -c web",
))
def refresh(
    ctx: typer.Context,
    collection: CollectionOpt = None,
    every: Annotated[Optional[float], typer.Option(
        "--every", parser=_interval, metavar="INTERVAL", help="refresh again after each INTERVAL (e.g. 30m, 1h, 1d) until Ctrl-C",
    )] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document per refresh on stdout.")] = False,
) -> None:
    """Fetch URL documents again (conditional GET) and re-ingest the ones whose content changed."""
    with open_kb(ctx, must_exist=True) as kb:
        if every is None:
            _report_ingest(kb.refresh(collection), as_json)
            return
        try:
            while True:
                _print_ingest(kb.refresh(collection), as_json)
                sys.stdout.flush()
                time.sleep(every)
        except KeyboardInterrupt:
            pass


@commands.command("list", rich_help_panel=PANEL, epilog=examples("sourcebook list", "sourcebook list --status error --json"))
def list_documents(
    ctx: typer.Context,
    collection: CollectionOpt = None,
    status: Annotated[Optional[DocumentStatus], typer.Option("--status", help="Only documents in this state.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List documents with their status and chunk count."""
    with open_kb(ctx, must_exist=True) as kb:
        records = kb.documents(collection, status)
    if as_json:
        emit_json({"documents": [r.to_dict() for r in records]})
        return
    # Ids and sources are for copying into `show`/`remove`: never cut them.
    table = Table(
        Column("id", no_wrap=True, min_width=16), "collection", "status", "chunks", "title",
        Column("source", overflow="fold"),
    )
    for r in records:
        shown = f"{r.status} ({r.error})" if r.error else str(r.status)
        table.add_row(r.id, r.collection, shown, str(r.chunk_count), r.title, r.source)
    out.print(table)


@commands.command(rich_help_panel=PANEL, epilog=examples("sourcebook show docs/employee-handbook.md", "sourcebook show DOC_ID --json"))
def show(
    ctx: typer.Context,
    document: Annotated[str, typer.Argument(help="Document id or source.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a document's record and its chunks."""
    with open_kb(ctx, must_exist=True) as kb:
        record = kb.document(document, collection)
        chunks = kb.chunks(record.id)
    if as_json:
        emit_json({"document": record.to_dict(), "chunks": [
            {"chunk_id": c.id, "position": c.position, "heading_path": list(c.heading_path), "page": c.page,
             "location": c.location, "text": c.text}
            for c in chunks
        ]})
        return
    for key, value in record.to_dict().items():
        out.print(f"[bold]{key}[/bold]: {value}", highlight=False)
    for c in chunks:
        out.rule(f"{c.id}  {c.location}")
        out.print(c.text, highlight=False)


@commands.command(rich_help_panel=PANEL, epilog=examples("sourcebook remove docs/old-policy.md", "sourcebook remove DOC_ID -c people"))
def remove(
    ctx: typer.Context,
    document: Annotated[str, typer.Argument(help="Document id or source.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a document with its chunks, vectors and index rows."""
    with open_kb(ctx, must_exist=True) as kb:
        record = kb.remove(document, collection)
    if as_json:
        emit_json({"removed": record.to_dict()})
    else:
        out.print(f"removed {record.id} ({record.source})", highlight=False)


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook status", "sourcebook --db kb.db status --json", "sourcebook status --repair",
))
def status(
    ctx: typer.Context,
    repair: Annotated[bool, typer.Option(
        "--repair", help="first finish interrupted documents (their ingesting process ended): add them again",
    )] = False,
    as_json: JsonOpt = False,
) -> None:
    """Counts of documents by status, chunks, collections and the database size."""
    with open_kb(ctx, must_exist=True) as kb:
        repaired = kb.repair() if repair else None
        stats = kb.status()
    if as_json:
        emit_json(stats if repaired is None else {**stats, "repaired": [r.to_dict() for r in repaired]})
        return
    if repaired is not None:
        for r in repaired:
            out.print(f"{r.action} {r.source}" + (f": {r.error}" if r.error else ""), highlight=False)
        out.print(f"{len(repaired)} interrupted documents repaired", highlight=False)
    for key, value in stats.items():
        out.print(f"[bold]{key}[/bold]: {value}", highlight=False)
