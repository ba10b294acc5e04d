"""Listening sockets for the servers (`sourcebook serve`, `sourcebook mcp --transport http`).

Bound and listening before the server starts, so `port=0` can report the port it got and
clients that connect at once wait in the backlog instead of being refused.
"""

from __future__ import annotations

import socket


def listening_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free port), inheritable by worker processes."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
