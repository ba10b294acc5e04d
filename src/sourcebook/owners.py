"""Who is ingesting a document, and whether that process still lives.

A process that marks a document pending or processing records itself as its owner
(`this_process`): host, pid and the process's start time. A reader (any store's
`get_document`, `list_documents`, `stats`) asks `owner_gone`: on the same host a pid that
no longer runs, or runs a different program started later (a reused pid), means the
ingestion was interrupted (a CLI killed with SIGKILL, a crashed server), so the document
reads `interrupted` instead of a `processing` that would never end. An owner on another
host cannot be checked from here and counts as alive; on Postgres the job queue's own
heartbeats (jobs/worker.py) recover a worker that died.
"""

from __future__ import annotations

import os
import socket
from functools import cache

_SEPARATOR = "/"


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), "" where /proc has none.

    With the pid it names one process for the host's uptime: a pid reused by a later
    process has another start time."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else ""


def this_process() -> str:
    """This process as an owner: "host/pid/start time" (a forked child is a process of its own)."""
    return _owner_of(os.getpid())


@cache
def _owner_of(pid: int) -> str:
    return owner_token(socket.gethostname(), pid, _start_time(pid))


def owner_token(host: str, pid: int, started: str) -> str:
    return _SEPARATOR.join((host.replace(_SEPARATOR, "_"), str(pid), started))


def describe(owner: str) -> str:
    """An owner as people read it: "pid 1234 on host"."""
    host, pid, _ = (owner.split(_SEPARATOR) + ["", "", ""])[:3]
    return f"pid {pid} on {host}"


def owner_gone(owner: str | None) -> bool:
    """Whether the process `owner` names has ended (False when unknown: no owner, another host)."""
    if not owner:
        return False
    parts = owner.split(_SEPARATOR)
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    host, pid, started = parts[0], int(parts[1]), parts[2]
    if host != socket.gethostname().replace(_SEPARATOR, "_"):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process runs under that pid
        pass
    return bool(started) and _start_time(pid) not in ("", started)


def interrupted_reason(owner: str) -> str:
    """The error an interrupted document shows: what happened and what finishes it."""
    return (
        f"interrupted: the process ingesting it ({describe(owner)}) ended before it was ready; "
        "`sourcebook status --repair` or adding it again finishes it"
    )
