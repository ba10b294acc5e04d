"""`sourcebook worker`: process the Postgres ingestion queue (jobs/worker.py), on any machine.

Registered by cli.py. cli.py's helpers (the --db option's value, JSON errors) are imported
inside the command because cli.py imports this module while it is itself being imported.
"""

from __future__ import annotations

import logging
import os
from typing import Annotated, Optional

import typer

from .errors import ConfigurationError
from .jobs import POSTGRES_SCHEMES
from .jobs.worker import HEARTBEAT_SECONDS, STALLED_AFTER_SECONDS
from .settings import Settings


def worker(
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, help="jobs run at once (threads sharing one model)")] = 1,
    heartbeat: Annotated[float, typer.Option("--heartbeat", min=0.1, help="seconds between heartbeats")] = HEARTBEAT_SECONDS,
    stalled_after: Annotated[
        float, typer.Option("--stalled-after", min=0.2, help="seconds without a heartbeat before a worker's jobs are requeued")
    ] = STALLED_AFTER_SECONDS,
    shutdown_timeout: Annotated[
        Optional[float], typer.Option("--shutdown-timeout", help="on SIGTERM, seconds to let running jobs finish (default: no limit)")
    ] = None,
    until_idle: Annotated[bool, typer.Option("--until-idle", help="exit once no job is left to start")] = False,
    name: Annotated[Optional[str], typer.Option("--name", help="worker name in logs")] = None,
) -> None:
    """Process ingestion jobs from the Postgres queue until SIGTERM/SIGINT (then finish the running ones)."""
    from .cli import _errors, _State
    from .jobs.worker import IngestWorker
    from .wiring import Components

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with _errors(False):
        db = _State.db or os.environ.get("SOURCEBOOK_DB") or ""
        if not db.startswith(POSTGRES_SCHEMES):
            raise ConfigurationError(
                "sourcebook worker needs a Postgres database: --db postgresql://... (SQLite ingests in-process)"
            )
        with Components.build(Settings(db=db)) as parts:
            runner = IngestWorker(parts, concurrency=concurrency, heartbeat=heartbeat, stalled_after=stalled_after,
                                  shutdown_timeout=shutdown_timeout, name=name)
            try:
                runner.run_until_idle() if until_idle else runner.run()
            finally:
                runner.close()
