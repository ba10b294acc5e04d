"""An MCP server over the `KnowledgeBase` facade: search, ask, summarize, related, add and list as tools.

Assistants that speak the Model Context Protocol (Claude Desktop, IDE agents, any
`mcp` client) get the same four verbs as the CLI and the same JSON shapes as its
`--json` contract, so one set of docs describes every interface. Documents are
also readable as resources (`sourcebook://documents/{id}`), so a client can open
the whole document a hit came from without another tool call.

Built on the official SDK's `MCPServer` (mcp 2.x; FastMCP in 1.x). Tools are
plain synchronous functions: the SDK runs them in worker threads, which the store
allows (one connection guarded by a lock) and the embedder allows (onnxruntime
sessions are thread-safe).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import ToolAnnotations

from .errors import DocumentNotFoundError, SourcebookError
from .kb import DEFAULT_COLLECTION, KnowledgeBase
from .sockets import listening_socket

INSTRUCTIONS = """\
Sourcebook is a knowledge base of the user's documents. Use `search` to find passages
(each hit has its document, section and page), `ask` for a cited answer (it abstains when
the documents do not say), `summarize` for a document's or a collection's cited summary,
`related` for documents like a given one, `list` to see what documents exist and their
ingestion status, and `add` to ingest files, folders or URLs. Quote answers with their citations."""

Mode = Literal["hybrid", "keyword", "vector"]
_T = TypeVar("_T")


def _tool_call(action: Callable[[], _T]) -> _T:
    """Run a facade call; a SourcebookError becomes a ToolError the model can read.

    Anything else is a bug: the SDK reports it as a generic failure and logs the traceback.
    """
    try:
        return action()
    except SourcebookError as exc:
        raise ToolError(f"{exc.code}: {exc}") from exc


def create_server(kb: KnowledgeBase, *, read_only: bool = False) -> MCPServer:
    """An MCP server answering from `kb`. `read_only` leaves out the `add` tool.

    The server does not own `kb`: the caller closes it after the server stops.
    """
    server: MCPServer = MCPServer("sourcebook", instructions=INSTRUCTIONS, version=_version())
    reading = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=reading)
    def search(
        query: str,
        top_k: int = 5,
        mode: Mode = "hybrid",
        collection: str | None = None,
        per_document: int | None = None,
    ) -> dict[str, Any]:
        """Search the documents for passages about `query`.

        Returns {"query", "hits": [{"rank", "score", "document_id", "source", "title",
        "chunk_id", "text", "heading_path", "page", ...}]}, best first. `mode` is hybrid
        (keywords + meaning, the default), keyword or vector; `per_document` caps hits per
        document (default 1, 0 = no cap).
        """
        hits = _tool_call(lambda: kb.search(
            query, top_k=top_k, mode=mode, collection=collection, per_document=per_document,
        ))
        return {"query": query, "hits": [hit.to_dict() for hit in hits]}

    @server.tool(annotations=reading)
    def ask(question: str, collection: str | None = None, top_k: int | None = None) -> dict[str, Any]:
        """Answer `question` from the documents, citing sources as [n].

        Returns {"question", "answer", "abstained", "citations": [{"n", "document_id",
        "source", "chunk_id", "quote", "title", "heading_path", "page"}], "confidence", ...}.
        When the documents do not hold the answer, `abstained` is true: say so rather than
        guessing.
        """
        answer = _tool_call(lambda: kb.ask(question, collection=collection, top_k=top_k))
        return answer.to_dict()

    @server.tool(annotations=reading)
    def summarize(document: str | None = None, collection: str | None = None, sentences: int = 8) -> dict[str, Any]:
        """Summarize a document (its id or source), or with only `collection` a whole collection.

        Returns {"document_id", "source", "title", "summary", "citations": [{"n", "chunk_id",
        "quote", "page", ...}], "summarizer", "cached", ...}: every sentence of `summary` ends in
        [n] markers naming the citation it comes from. Cached until the document changes.
        """
        if document is None and collection is None:
            raise ToolError("invalid_query: name a `document`, or a `collection` to summarize")
        if document is None:
            assert collection is not None
            summary = _tool_call(lambda: kb.summarize_collection(collection, sentences=sentences))
        else:
            summary = _tool_call(lambda: kb.summarize(document, collection, sentences=sentences))
        return summary.to_dict()

    @server.tool(annotations=reading)
    def related(document: str, top_k: int = 5, collection: str | None = None) -> dict[str, Any]:
        """Documents most like `document` (an id or source), the document itself left out.

        Returns {"documents": [{"document_id", "source", "title", "collection", "score",
        "chunk_id"}]}, most alike first; `collection` keeps only that collection's documents.
        """
        found = _tool_call(lambda: kb.related(document, top_k=top_k, collections=None if collection is None else [collection]))
        return {"documents": [d.to_dict() for d in found]}

    @server.tool(name="list", annotations=reading)
    def list_documents(collection: str | None = None, status: str | None = None) -> dict[str, Any]:
        """List the documents with their status (pending, processing, ready, error) and chunk count.

        Optionally only one `collection` or one `status`.
        """
        records = _tool_call(lambda: kb.documents(collection, _check_status(status)))
        return {"documents": [record.to_dict() for record in records]}

    if not read_only:
        @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True))
        def add(sources: list[str], collection: str = DEFAULT_COLLECTION) -> dict[str, Any]:
            """Add files, folders (recursively) or http(s) URLs to the knowledge base.

            Paths are on the machine running the server. Unchanged sources are skipped;
            changed ones re-embed only changed chunks. Returns {"results": [{"source",
            "action" (added/updated/unchanged/failed), "document_id", "status", "chunks",
            "error"}], "summary": {action: count}}; one failed source never stops the others.
            """
            if not sources:
                raise ToolError("invalid_query: name at least one file, folder or URL in `sources`")
            results = _tool_call(lambda: kb.add(sources, collection))
            summary: dict[str, int] = {}
            for result in results:
                summary[result.action] = summary.get(result.action, 0) + 1
            return {"results": [r.to_dict() for r in results], "summary": summary}

    @server.resource(
        "sourcebook://documents/{document_id}",
        name="document",
        description="A document's full text as Markdown: its title, then each chunk under its section path.",
        mime_type="text/markdown",
    )
    def document(document_id: str) -> str:
        try:
            record = kb.document(document_id)
            chunks = kb.chunks(record.id)
        except DocumentNotFoundError as exc:
            raise ResourceError(f"{exc.code}: {exc}") from exc
        parts = [f"# {record.title}", f"source: {record.source}"]
        section: tuple[str, ...] = ()
        for chunk in chunks:
            if chunk.heading_path and chunk.heading_path != section:
                section = chunk.heading_path
                parts.append("## " + " > ".join(section))
            parts.append(chunk.text)
        return "\n\n".join(parts)

    return server


def _check_status(status: str | None) -> str | None:
    """Reject an unknown status by name (the facade would raise a bare ValueError)."""
    allowed = ("pending", "processing", "ready", "error")
    if status is not None and status not in allowed:
        raise ToolError(f"invalid_query: status must be one of {', '.join(allowed)}, not {status!r}")
    return status


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sourcebook")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0"


def run_stdio(server: MCPServer) -> None:
    """Serve one client over stdin/stdout until it disconnects."""
    server.run("stdio")


def run_http(server: MCPServer, host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp") -> None:
    """Serve streamable HTTP at http://host:port/path until interrupted.

    The socket is bound here, before uvicorn starts, so `port=0` works: the chosen port is
    printed on stderr ("sourcebook mcp: listening on http://...") for whoever started us.
    On a loopback host the SDK checks Host and Origin headers (DNS-rebinding protection).
    """
    import anyio
    import uvicorn

    sock = listening_socket(host, port)
    bound_port = sock.getsockname()[1]
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    shown = f"[{host}]" if ":" in host else host
    print(f"sourcebook mcp: listening on http://{shown}:{bound_port}{path}", file=sys.stderr, flush=True)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
