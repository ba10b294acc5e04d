"""The `sourcebook` command: a thin typer layer over `KnowledgeBase`.

Human output goes through rich (tables, a progress bar on stderr); `--json` on
every command prints one machine-readable JSON document on stdout instead.
Exit status: 0 success, 1 when a command failed (or any source of `add` failed).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from .answering.llm import AnswerStream
from .chunking import make_prefix
from .cli_eval import eval_app
from .cli_keys import keys_app
from .cli_serve import serve
from .cli_store import copy, migrate, postgres_app
from .cli_mcp import mcp_command
from .cli_graph import build_after_add, graph_app, print_build
from .cli_jobs import worker
from .errors import SourcebookError
from .ingest import IngestEvent
from .kb import DEFAULT_COLLECTION, KnowledgeBase
from .models import Answer, Hit, IngestResult

app = typer.Typer(help="Sourcebook: add documents, search them, ask cited questions.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
app.add_typer(keys_app, name="keys")
app.command()(serve)
app.command("mcp")(mcp_command)
app.add_typer(graph_app, name="graph")
app.command()(worker)
out = Console()
err = Console(stderr=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
CollectionOpt = Annotated[Optional[str], typer.Option("--collection", "-c", help="Collection to use.")]


class _State:
    db: str | None = None
    tenant: str | None = None


def _open() -> KnowledgeBase:
    """The knowledge base the global options (else $SOURCEBOOK_DB / $SOURCEBOOK_TENANT) name."""
    overrides = {"tenant": _State.tenant} if _State.tenant else {}
    return KnowledgeBase.open(_State.db or os.environ.get("SOURCEBOOK_DB") or "sourcebook.db", **overrides)


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")


@contextmanager
def _errors(as_json: bool) -> Iterator[None]:
    """Turn a SourcebookError into a one-line message (or JSON error) and exit 1."""
    try:
        yield
    except SourcebookError as exc:
        if as_json:
            _emit_json({"error": {"code": exc.code, "message": str(exc)}})
        else:
            err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc


def _parse_meta(pairs: list[str] | None) -> dict[str, Any] | None:
    """`key=value` options; values that parse as JSON (numbers, true/false) keep their type."""
    if not pairs:
        return None
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected key=value, got {pair!r}")
        try:
            parsed[key] = json.loads(value)
        except json.JSONDecodeError:
            parsed[key] = value
    return parsed


@app.callback()
def main(
    db: Annotated[
        Optional[str], typer.Option("--db", help="Knowledge base file (else $SOURCEBOOK_DB, else ./sourcebook.db).")
    ] = None,
    tenant: Annotated[
        Optional[str], typer.Option("--tenant", help="Tenant to act as (else $SOURCEBOOK_TENANT, else 'default').")
    ] = None,
) -> None:
    _State.db = db
    _State.tenant = tenant


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[IngestEvent], None] | None]:
    """A rich progress bar on stderr for documents and embedded chunks."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=False) as bar:
        docs = bar.add_task("documents", total=None)
        chunks = bar.add_task("chunks embedded", total=None)

        def handle(event: IngestEvent) -> None:
            if event.kind == "planned":
                bar.update(docs, total=(bar.tasks[docs].total or 0) + event.count)
            elif event.kind == "document":
                bar.advance(docs, event.count)
            elif event.kind == "embedded":
                bar.advance(chunks, event.count)

        yield handle


def _report_ingest(results: list[IngestResult], as_json: bool, extra: dict[str, Any] | None = None) -> None:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.action] = counts.get(r.action, 0) + 1
    if as_json:
        _emit_json({"results": [r.to_dict() for r in results], "summary": counts, **(extra or {})})
    else:
        for r in results:
            if r.action == "failed":
                err.print(f"[red]failed[/red] {r.error}", highlight=False)
        summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or "nothing to do"
        embedded = sum(r.embedded for r in results)
        out.print(f"{summary}; {embedded} chunks embedded")
    if counts.get("failed"):
        raise typer.Exit(1)


@app.command()
def add(
    sources: Annotated[list[str], typer.Argument(help="Files, folders or http(s) URLs.")],
    collection: CollectionOpt = None,
    format: Annotated[str, typer.Option("--format", help="'auto', or 'beir' for a BEIR corpus.jsonl")] = "auto",
    meta: Annotated[Optional[list[str]], typer.Option("--meta", help="key=value metadata for every document")] = None,
    graph: Annotated[bool, typer.Option("--graph", help="also build their knowledge graph (see `graph build`)")] = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="on Postgres, wait for the queued jobs")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Add documents (new or changed ones only) to the knowledge base."""
    with _errors(as_json), _open() as kb, _progress(err.is_terminal) as progress:
        results = kb.add(
            sources, collection or DEFAULT_COLLECTION, metadata=_parse_meta(meta), format=format, progress=progress, wait=wait
        )
        report = build_after_add(kb, results) if graph else None
    if report is not None and not as_json:
        print_build(report)
    _report_ingest(results, as_json, {"graph": report.to_dict()} if report else None)


@app.command()
def sync(
    directory: Annotated[Path, typer.Argument(help="Folder to mirror.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add new and changed files of DIRECTORY, remove documents whose files are gone."""
    with _errors(as_json), _open() as kb, _progress(err.is_terminal) as progress:
        results = kb.sync(directory, collection or DEFAULT_COLLECTION, progress=progress)
    _report_ingest(results, as_json)


def _hits_table(hits: list[Hit]) -> Table:
    table = Table("#", "score", "title / section", "text", show_lines=True)
    for hit in hits:
        c = hit.chunk
        where = make_prefix(c.title, c.heading_path)
        page = f" (p. {c.page})" if c.page else ""
        text = c.text if len(c.text) <= 300 else c.text[:300] + "…"
        table.add_row(str(hit.rank), f"{hit.score:.4f}", f"{where}{page}\n[dim]{c.source}[/dim]", text)
    return table


@app.command()
def search(
    query: Annotated[Optional[str], typer.Argument(help="What to look for.")] = None,
    queries_file: Annotated[
        Optional[Path], typer.Option("--queries-file", help='JSONL of {"_id", "text"}: one output line per query')
    ] = None,
    top_k: Annotated[Optional[int], typer.Option("--top-k", "-k", min=1)] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", help="keyword, vector, hybrid or graph")] = None,
    collection: CollectionOpt = None,
    doc: Annotated[Optional[list[str]], typer.Option("--doc", help="restrict to these document ids")] = None,
    meta: Annotated[Optional[list[str]], typer.Option("--meta", help="key=value metadata filter")] = None,
    min_score: Annotated[Optional[float], typer.Option("--min-score")] = None,
    per_document: Annotated[Optional[int], typer.Option("--per-document", help="most hits per document, 0 = any")] = None,
    graph: Annotated[Optional[bool], typer.Option("--graph/--no-graph", help="hybrid: fuse the knowledge graph's list too")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the knowledge base (hybrid keyword + vector by default)."""
    if (query is None) == (queries_file is None):
        raise typer.BadParameter("give a QUERY or --queries-file, not both")
    kwargs: dict[str, Any] = dict(
        mode=mode, top_k=top_k, collection=collection, document_ids=doc, metadata=_parse_meta(meta),
        min_score=min_score, per_document=per_document, graph=graph,
    )
    with _errors(as_json), _open() as kb:
        if queries_file is not None:
            records = [json.loads(line) for line in queries_file.read_text(encoding="utf-8").splitlines() if line.strip()]
            results = kb.search_many([r["text"] for r in records], **kwargs)
            for record, hits in zip(records, results, strict=True):
                if as_json:
                    _emit_json({"query_id": record["_id"], "hits": [h.to_dict() for h in hits]})
                else:
                    out.print(f"[bold]{record['_id']}[/bold] {record['text']}")
                    out.print(_hits_table(hits))
            return
        assert query is not None
        hits = kb.search(query, **kwargs)
    if as_json:
        _emit_json({"query": query, "hits": [h.to_dict() for h in hits]})
    elif hits:
        out.print(_hits_table(hits))
    else:
        out.print("No results.")


LlmOpt = Annotated[
    Optional[str],
    typer.Option("--llm", help="provider:model that writes the answer (anthropic, openai, gemini, llamacpp); "
                               "default: settings.llm, else an extractive answer"),
]
AnswerModeOpt = Annotated[
    Optional[str], typer.Option("--mode", help="retrieval (top chunks), full-context (whole documents) or auto")
]
ANSWER_MODES = ("retrieval", "full-context", "auto")


def _answer_mode(mode: str | None) -> Any:
    if mode is not None and mode not in ANSWER_MODES:
        raise typer.BadParameter(f"--mode must be one of {', '.join(ANSWER_MODES)}, got {mode!r}")
    return mode


def _render_answer(answer: Answer, streamed: str | None = None) -> None:
    """The answer (unless it was streamed already), its sources, the check's verdict and follow-ups."""
    if streamed is None:
        out.print(answer.answer, highlight=False, markup=False)
    elif answer.answer != streamed.strip():
        out.print("\n[dim]after the citation check:[/dim]")
        out.print(answer.answer, highlight=False, markup=False)
    check = answer.citation_check
    if check is not None and check.removed:
        out.print(f"[yellow]removed citations to missing sources: {', '.join(map(str, check.removed))}[/yellow]")
    if answer.citations:
        out.print("\n[bold]Sources[/bold]")
        seen: set[int] = set()
        for c in answer.citations:
            if c.n in seen:
                continue
            seen.add(c.n)
            page = f", p. {c.page}" if c.page else ""
            line = f"[{c.n}] {make_prefix(c.title, c.heading_path)}{page} — {c.source}"
            out.print(line, highlight=False, markup=False)
    if check is not None:
        out.print(f"\n[dim]citation check: {check.verdict.replace('_', ' ')}[/dim]")
        for sentence in check.sentences:
            if sentence.status != "supported":
                out.print(f"[yellow]  {sentence.status}:[/yellow] {escape(sentence.text)}", highlight=False)
    if answer.follow_up_questions:
        out.print("\n[bold]Follow-up questions[/bold]")
        for question in answer.follow_up_questions:
            out.print(f"- {question}", highlight=False, markup=False)
    tokens = f" · {answer.usage['input_tokens']} in / {answer.usage['output_tokens']} out tokens" if answer.usage else ""
    out.print(f"\n[dim]confidence {answer.confidence:.2f} · {answer.mode} · {answer.answerer}{tokens}[/dim]")


def _print_stream(stream: AnswerStream) -> None:
    """Print the answer's words as they arrive, then everything that needs the finished answer."""
    written: list[str] = []
    for delta in stream:
        written.append(delta)
        sys.stdout.write(delta)
        sys.stdout.flush()
    sys.stdout.write("\n")
    _render_answer(stream.answer, "".join(written))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question in plain words.")],
    collection: CollectionOpt = None,
    top_k: Annotated[Optional[int], typer.Option("--top-k", "-k", min=1, help="chunks to draw from")] = None,
    llm: LlmOpt = None,
    mode: AnswerModeOpt = None,
    rewrite: Annotated[
        Optional[bool], typer.Option("--rewrite/--no-rewrite", help="also search LLM-written variations of the question")
    ] = None,
    stream: Annotated[bool, typer.Option("--stream/--no-stream", help="print the answer as it is written")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Answer from the documents, citing each sentence; abstains when they do not say."""
    options: dict[str, Any] = dict(collection=collection, top_k=top_k, llm=llm, mode=_answer_mode(mode), rewrite=rewrite)
    with _errors(as_json), _open() as kb:
        if as_json or not stream:
            answer = kb.ask(question, **options)
            if as_json:
                _emit_json(answer.to_dict())
            else:
                _render_answer(answer)
        else:
            _print_stream(kb.ask_stream(question, **options))


def _questions(interactive: bool) -> Iterator[str]:
    """Questions typed at a prompt (interactive) or read one per line from stdin; /exit ends."""
    while True:
        try:
            line = input("you> ") if interactive else sys.stdin.readline()
        except EOFError:
            return
        if not interactive and not line:
            return
        line = line.strip()
        if line in ("/exit", "/quit"):
            return
        if line:
            yield line


@app.command()
def chat(
    session: Annotated[Optional[str], typer.Option("--session", "-s", help="resume this session id")] = None,
    llm: LlmOpt = None,
    mode: AnswerModeOpt = None,
    collection: CollectionOpt = None,
    list_sessions: Annotated[bool, typer.Option("--list", help="list the chat sessions and exit")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Talk with the documents: follow-up questions build on the earlier ones (kept in the knowledge base)."""
    with _errors(as_json), _open() as kb:
        if list_sessions:
            sessions = kb.chat_sessions()
            if as_json:
                _emit_json({"sessions": [asdict(s) for s in sessions]})
                return
            table = Table("id", "title", "messages", "updated")
            for s in sessions:
                table.add_row(s.id, s.title, str(s.message_count), s.updated_at)
            out.print(table)
            return
        conversation = kb.chat(session, llm=llm, mode=_answer_mode(mode), collection=collection)
        interactive = sys.stdin.isatty() and not as_json
        if not as_json:
            err.print(f"[dim]session {conversation.id} (resume with --session {conversation.id}); /exit or Ctrl-D to leave[/dim]")
        for question in _questions(interactive):
            if as_json:
                _emit_json({"session_id": conversation.id, **conversation.ask(question).to_dict()})
                continue
            try:
                _print_stream(conversation.ask_stream(question))
            except SourcebookError as exc:  # one failed turn does not end the conversation
                err.print(f"[red]error:[/red] {exc}", highlight=False)


@app.command("list")
def list_documents(
    collection: CollectionOpt = None,
    status: Annotated[Optional[str], typer.Option("--status", help="pending, processing, ready or error")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List documents with their status and chunk count."""
    with _errors(as_json), _open() as kb:
        records = kb.documents(collection, status)
    if as_json:
        _emit_json({"documents": [r.to_dict() for r in records]})
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


@app.command()
def show(
    document: Annotated[str, typer.Argument(help="Document id or source.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a document's record and its chunks."""
    with _errors(as_json), _open() as kb:
        record = kb.document(document, collection)
        chunks = kb.chunks(record.id)
    if as_json:
        _emit_json({"document": record.to_dict(), "chunks": [
            {"chunk_id": c.id, "position": c.position, "heading_path": list(c.heading_path), "page": c.page, "text": c.text}
            for c in chunks
        ]})
        return
    for key, value in record.to_dict().items():
        out.print(f"[bold]{key}[/bold]: {value}", highlight=False)
    for c in chunks:
        out.rule(f"{c.id}  {' > '.join(c.heading_path)}{f'  p. {c.page}' if c.page else ''}")
        out.print(c.text, highlight=False)


@app.command()
def remove(
    document: Annotated[str, typer.Argument(help="Document id or source.")],
    collection: CollectionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a document with its chunks, vectors and index rows."""
    with _errors(as_json), _open() as kb:
        record = kb.remove(document, collection)
    if as_json:
        _emit_json({"removed": record.to_dict()})
    else:
        out.print(f"removed {record.id} ({record.source})", highlight=False)


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Counts of documents by status, chunks, collections and the database size."""
    with _errors(as_json), _open() as kb:
        stats = kb.status()
    if as_json:
        _emit_json(stats)
        return
    for key, value in stats.items():
        out.print(f"[bold]{key}[/bold]: {value}", highlight=False)


# Database commands (cli_store.py), listed after the everyday ones.
app.command()(migrate)
app.command()(copy)
app.add_typer(postgres_app, name="postgres")
