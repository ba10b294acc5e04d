"""`sourcebook serve`: run the HTTP API with uvicorn (needs the `server` extra).

The socket is bound here, before uvicorn starts, so `--port 0` works (the OS picks a free
port) and the printed URL is the real one. `--no-auth` serves everyone as an admin of the
default tenant, so it refuses any address but loopback.
"""

from __future__ import annotations

import ipaddress
import sys
from typing import Annotated, Optional

import typer

from .sockets import listening_socket

LOOPBACK_HOSTS = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
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
) -> None:
    """Serve the knowledge base over HTTP: the /v1 API, /healthz, /metrics, /openapi.json."""
    try:
        import uvicorn

        from .server import ServerSettings, create_app
        from .server.observability import configure_logging
    except ImportError as exc:
        raise typer.BadParameter(f"the HTTP service needs its extra: pip install 'sourcebook[server]' ({exc})") from exc
    from .cli import _State, _errors, _open

    if no_auth and not _is_loopback(host):
        raise typer.BadParameter(f"--no-auth serves everyone as an admin, so it binds loopback only, not {host!r}")
    if db is not None:
        _State.db = db
    overrides: dict[str, object] = {"log_json": log_json}
    if no_auth:
        overrides["auth"] = False
    if cors_origin:
        overrides["cors_origins"] = cors_origin
    settings = ServerSettings(**overrides)  # type: ignore[arg-type]
    configure_logging(settings.log_json)
    with _errors(False), _open() as kb:
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
