"""`sourcebook mcp`: serve the knowledge base to MCP clients over stdio or streamable HTTP.

Registered by cli.py as one command. The `mcp` SDK is an optional extra, imported
only when the command runs, so the rest of the CLI works without it. cli.py's
helpers are imported inside the command because cli.py imports this module while
it is itself being imported.
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def mcp_command(
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
    from .cli import _errors, _open
    from .errors import ConfigurationError

    with _errors(False):
        if transport == "http" and host not in LOOPBACK and not allow_remote:
            raise ConfigurationError(
                f"--host {host} would expose the MCP endpoint, which has no authentication, beyond this machine; "
                "pass --allow-remote to do so on purpose (and consider --read-only)"
            )
        try:
            from .mcp import create_server, run_http, run_stdio
        except ImportError as exc:
            raise ConfigurationError(f"the MCP server needs the mcp package: pip install 'sourcebook[mcp]' ({exc})") from exc
        with _open() as kb:
            server = create_server(kb, read_only=read_only)
            if transport == "stdio":
                run_stdio(server)
            else:
                run_http(server, host, port, path)
