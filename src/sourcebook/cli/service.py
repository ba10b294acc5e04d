"""Long-running services: `serve` (HTTP API), `mcp` (MCP server) and `worker` (Postgres jobs).

Each needs an optional extra ('server', 'mcp', 'postgres'): its modules are imported inside
the command, after `require_extra` has checked the extra is installed, so the base install's
CLI starts without them and says which extra to install.

`serve` binds its socket here, before uvicorn starts, so `--port 0` works (the OS picks a
free port) and the printed URL is the real one. `--no-auth` serves everyone as an admin of the
default tenant, so it refuses any address but loopback.
"""

from __future__ import annotations

import ipaddress
import logging
import sys
from typing import Annotated, Any, Literal, Optional

import typer

from ..errors import ConfigurationError
from ..sockets import listening_socket
from ._common import POSTGRES_URL_SCHEMES, cli_state, examples, load_settings, open_kb, require_extra

PANEL = "Services"
commands = typer.Typer()

LOOPBACK_HOSTS = ("localhost",)
MCP_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook --db kb.db serve --port 8000",
    "sourcebook serve --no-auth --cors-origin http://localhost:5173",
    "sourcebook serve --watch docs/ --watch handbook/:people",
))
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port (0: any free one).")] = 8000,
    db: Annotated[Optional[str], typer.Option("--db", help="Knowledge base to serve (else the global --db).")] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="No API keys: everyone is an admin of the served tenant. Loopback only.")
    ] = False,
    cors_origin: Annotated[
        Optional[list[str]], typer.Option("--cors-origin", help="Browser origin allowed to call the API (repeat).")
    ] = None,
    log_json: Annotated[bool, typer.Option("--log-json/--log-text", help="JSON log lines (default) or plain text.")] = True,
    watch: Annotated[Optional[list[str]], typer.Option(
        "--watch", metavar="DIR[:COLLECTION]", help="Folder to keep in sync while serving (repeat; see `sourcebook watch`).",
    )] = None,
) -> None:
    """Serve the knowledge base over HTTP: the /v1 API, /healthz, /metrics, /openapi.json."""
    require_extra("`sourcebook serve`", "server")
    import uvicorn

    from ..server import ServerSettings, create_app
    from ..server.observability import configure_logging

    if no_auth and not _is_loopback(host):
        raise typer.BadParameter(f"--no-auth serves everyone as an admin, so it binds loopback only, not {host!r}")
    if db is not None:
        cli_state(ctx).override_db(db)
    overrides: dict[str, Any] = {"log_json": log_json}
    if no_auth:
        overrides["auth"] = False
    if cors_origin:
        overrides["cors_origins"] = cors_origin
    if watch:
        overrides["watch"] = watch
    settings = load_settings(ServerSettings, overrides)
    configure_logging(settings.log_json)
    with open_kb(ctx, must_exist=False) as kb:
        app = create_app(kb, settings)
        kb.embedder.embed_query("warm up")  # load the model now, not in the first request
        sock = listening_socket(host, port)
        actual_host, actual_port = sock.getsockname()[:2]
        shown = f"[{actual_host}]" if ":" in actual_host else actual_host
        print(f"Sourcebook serving {kb.settings.db} (tenant {kb.tenant}) on http://{shown}:{actual_port}"
              f"{'' if settings.auth else ' without authentication'}", file=sys.stderr, flush=True)
        server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()


@commands.command("mcp", rich_help_panel=PANEL, epilog=examples(
    "sourcebook --db kb.db mcp",
    "sourcebook mcp --transport http --port 8765 --read-only",
))
def mcp_command(
    ctx: typer.Context,
    transport: Annotated[
        Literal["stdio", "http"], typer.Option("--transport", "-t", help="stdio (for a client that starts us) or http (streamable HTTP).")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP: address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP: port to bind (0 = any free port, printed on stderr).")] = 8765,
    path: Annotated[str, typer.Option("--path", help="HTTP: the endpoint's path.")] = "/mcp",
    read_only: Annotated[bool, typer.Option("--read-only", help="Leave out the `add` tool.")] = False,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="HTTP: allow a non-loopback --host (the MCP endpoint has no authentication).")
    ] = False,
) -> None:
    """Serve search, ask, add and list as MCP tools (and documents as resources)."""
    if transport == "http" and host not in MCP_LOOPBACK and not allow_remote:
        raise ConfigurationError(
            f"--host {host} would expose the MCP endpoint, which has no authentication, beyond this machine; "
            "pass --allow-remote to do so on purpose (and consider --read-only)"
        )
    require_extra("`sourcebook mcp`", "mcp")
    from ..mcp import create_server, run_http, run_stdio

    with open_kb(ctx, must_exist=False) as kb:
        server = create_server(kb, read_only=read_only)
        if transport == "stdio":
            run_stdio(server)
        else:
            run_http(server, host, port, path)


@commands.command(rich_help_panel=PANEL, epilog=examples(
    "sourcebook --db postgresql://localhost/kb worker --concurrency 2",
    "sourcebook --db postgresql://localhost/kb worker --until-idle",
))
def worker(
    ctx: typer.Context,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, help="jobs run at once (threads sharing one model)")] = 1,
    heartbeat: Annotated[
        Optional[float], typer.Option("--heartbeat", min=0.1, help="seconds between heartbeats (default 10)")
    ] = None,
    stalled_after: Annotated[
        Optional[float],
        typer.Option("--stalled-after", min=0.2, help="seconds without a heartbeat before a worker's jobs are requeued (default 30)"),
    ] = None,
    shutdown_timeout: Annotated[
        Optional[float], typer.Option("--shutdown-timeout", help="on SIGTERM, seconds to let running jobs finish (default: no limit)")
    ] = None,
    until_idle: Annotated[bool, typer.Option("--until-idle", help="exit once no job is left to start")] = False,
    name: Annotated[Optional[str], typer.Option("--name", help="worker name in logs")] = None,
) -> None:
    """Process ingestion jobs from the Postgres queue until SIGTERM/SIGINT (then finish the running ones)."""
    require_extra("`sourcebook worker`", "postgres")
    from ..jobs.worker import IngestWorker
    from ..wiring import Components

    settings = cli_state(ctx).settings
    if settings.db.partition("://")[0].lower() not in POSTGRES_URL_SCHEMES:
        raise ConfigurationError(
            "sourcebook worker needs a Postgres database: --db postgresql://... (SQLite ingests in-process)"
        )
    # The worker's own defaults apply to the timings not given (they live with the heartbeat code).
    timings = {key: value for key, value in (("heartbeat", heartbeat), ("stalled_after", stalled_after)) if value is not None}
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with Components.build(settings) as parts:
        runner = IngestWorker(parts, concurrency=concurrency, shutdown_timeout=shutdown_timeout, name=name, **timings)
        try:
            runner.run_until_idle() if until_idle else runner.run()
        finally:
            runner.close()
