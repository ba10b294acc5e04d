"""The question commands: search, ask, chat."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..answering.llm import AnswerStream
from ..errors import SourcebookError
from ..evaluation.dataset import read_queries
from ..locations import cited_as
from ..models import Answer, Hit
from ..settings import AnswerMode
from ._common import CollectionOpt, JsonOpt, emit_json, err, examples, open_kb, out, parse_meta, print_error

PANEL = "Questions"
commands = typer.Typer()

LlmOpt = Annotated[
    Optional[str],
    typer.Option("--llm", help="provider:model that writes the answer (anthropic, openai, gemini, llamacpp); "
                               "default: settings.llm, else an extractive answer"),
]
AnswerModeOpt = Annotated[
    Optional[str], typer.Option("--mode", help="retrieval (top chunks), full-context (whole documents) or auto")
]
ANSWER_MODES = ("retrieval", "full-context", "auto")


def _answer_mode(mode: str | None) -> AnswerMode | None:
    if mode is not None and mode not in ANSWER_MODES:
        raise typer.BadParameter(f"--mode must be one of {', '.join(ANSWER_MODES)}, got {mode!r}")
    return mode  # type: ignore[return-value]


def _hits_table(hits: list[Hit]) -> Table:
    table = Table("#", "score", "title / section", "text", show_lines=True)
    for hit in hits:
        c = hit.chunk
        text = c.text if len(c.text) <= 300 else c.text[:300] + "…"
        where = f"{escape(cited_as(c.title, c.location))}\n[dim]{escape(c.source)}[/dim]"
        table.add_row(str(hit.rank), f"{hit.score:.4f}", where, text)
    return table


@commands.command(rich_help_panel=PANEL, epilog=examples(
    'sourcebook search "parental leave" --top-k 5 --mode hybrid',
    'sourcebook search --queries-file queries.jsonl --json',
))
def search(
    ctx: typer.Context,
    query: Annotated[Optional[str], typer.Argument(help="What to look for.")] = None,
    queries_file: Annotated[
        Optional[Path],
        typer.Option("--queries-file", exists=True, dir_okay=False, help='JSONL of {"_id", "text"}: one output line per query'),
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
        mode=mode, top_k=top_k, collection=collection, document_ids=doc, metadata=parse_meta(meta),
        min_score=min_score, per_document=per_document, graph=graph,
    )
    with open_kb(ctx, must_exist=True) as kb:
        if queries_file is not None:
            queries = read_queries(queries_file)
            results = kb.search_many(list(queries.values()), **kwargs)
            for (query_id, text), hits in zip(queries.items(), results, strict=True):
                if as_json:
                    emit_json({"query_id": query_id, "hits": [h.to_dict() for h in hits]})
                else:
                    out.print(f"[bold]{escape(query_id)}[/bold] {escape(text)}")
                    out.print(_hits_table(hits))
            return
        assert query is not None
        hits = kb.search(query, **kwargs)
    if as_json:
        emit_json({"query": query, "hits": [h.to_dict() for h in hits]})
    elif hits:
        out.print(_hits_table(hits))
    else:
        out.print("No results.")


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
            line = f"[{c.n}] {cited_as(c.title, c.location)} — {c.source}"
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
    if answer.related:
        out.print("\n[bold]You may also want to read[/bold]")
        for document in answer.related:
            out.print(f"- {document.title} — {document.source}", highlight=False, markup=False)
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


@commands.command(rich_help_panel=PANEL, epilog=examples(
    'sourcebook ask "How long is parental leave at full pay?"',
    'sourcebook ask "What is the per diem in the UK?" --llm openai:gpt-4o-mini --json',
))
def ask(
    ctx: typer.Context,
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
    with open_kb(ctx, must_exist=True) as kb:
        if as_json or not stream:
            answer = kb.ask(question, **options)
            if as_json:
                emit_json(answer.to_dict())
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


@commands.command(rich_help_panel=PANEL, epilog=examples("sourcebook chat", "sourcebook chat --session SESSION_ID", "sourcebook chat --list"))
def chat(
    ctx: typer.Context,
    session: Annotated[Optional[str], typer.Option("--session", "-s", help="resume this session id")] = None,
    llm: LlmOpt = None,
    mode: AnswerModeOpt = None,
    collection: CollectionOpt = None,
    list_sessions: Annotated[bool, typer.Option("--list", help="list the chat sessions and exit")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Talk with the documents: follow-up questions build on the earlier ones (kept in the knowledge base)."""
    with open_kb(ctx, must_exist=True) as kb:
        if list_sessions:
            sessions = kb.chat_sessions()
            if as_json:
                emit_json({"sessions": [asdict(s) for s in sessions]})
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
                emit_json({"session_id": conversation.id, **conversation.ask(question).to_dict()})
                continue
            try:
                _print_stream(conversation.ask_stream(question))
            except SourcebookError as exc:  # one failed turn does not end the conversation
                print_error(str(exc))
