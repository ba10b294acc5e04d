"""The one registry for Sourcebook's pluggable parts: loaders, embedders, generators, stores.

Each kind of part is a `PluginKind`, declared in the package of its parts, with its
entry-point group and what an entry point of that group names:

- loaders: `sourcebook.loaders.base.LOADERS`, group ``sourcebook.loaders``: a `Loader` (or
  a class making one); all are tried in order by media type and file extension.
- embedders: `sourcebook.embedders.EMBEDDERS`, group ``sourcebook.embedders``:
  `(settings) -> Embedder`, named by the prefix of ``embedding_model`` ("openai:<model>").
- generators: `sourcebook.generators.base.GENERATORS`, group ``sourcebook.generators``:
  `(model, settings) -> Generator`, named by the provider of an LLM spec ("anthropic:<model>").
- stores: `sourcebook.stores.STORES`, group ``sourcebook.stores``: `(url) -> Store`, named
  by the URL scheme.

A part comes from one of three places, looked up in this order, so each can take over a
name from the next: registered in-process (`PluginKind.register`, which `register_loader`,
`register_generator` and `register_store` call), installed by another package under the
kind's entry-point group, or built in. Built-ins are declared exactly like installed entry
points, a name and a ``"module:attribute"`` reference, and loaded by the same code the
first time they are looked up -- the way simonw/llm registers even its default plugins
through its plugin manager. That keeps optional extras (psycopg, the LLM SDKs) unimported
until chosen, and a kind reads its entry-point group once, on its first lookup, never at
import: ``sourcebook --help`` pays for none of it.

Why not pluggy (which llm uses)? The four entry-point groups are documented contracts in
which an entry point *names one part* (a provider, a URL scheme) and points at a factory.
pluggy's model is different: every plugin is a module of hook implementations, all imported
and called to collect what they register. Adopting it would change (or wrap) the groups
third parties already use, import every installed plugin to open one ``memo://`` store, and
add a runtime dependency; a small typed registry over `importlib.metadata.entry_points`
keeps the contracts, imports only the part asked for, and is all the four kinds need.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from .errors import ConfigurationError

logger = logging.getLogger(__name__)

Part = TypeVar("Part")


@dataclass(frozen=True)
class Builtin:
    """A part that ships with Sourcebook, declared like an installed entry point.

    `extra` names the optional dependency group its module imports at the top, so a missing
    one becomes "install the extra" rather than a bare ModuleNotFoundError; `title` names
    the part in that message ("the Postgres store").
    """

    name: str
    reference: str
    """"module:attribute", as in an entry_points.txt."""
    extra: str | None = None
    title: str = ""

    def load(self) -> object:
        module_name, _, attribute = self.reference.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if self.extra is None:
                raise
            raise ConfigurationError(
                f"{self.title} needs the {self.extra!r} extra ({exc}): pip install 'sourcebook[{self.extra}]'"
            ) from exc
        return getattr(module, attribute)


class _Slot(Generic[Part]):
    """One named part, loaded (and prepared) on first use; a failure is kept and raised again."""

    def __init__(self, name: str, load: Callable[[], Part]) -> None:
        self.name = name
        self._load = load
        self._part: Part | None = None
        self._error: Exception | None = None

    @property
    def failed(self) -> bool:
        return self._error is not None

    def part(self) -> Part:
        if self._error is not None:
            raise self._error
        if self._part is None:
            try:
                self._part = self._load()
            except Exception as exc:
                self._error = exc
                raise
        return self._part


class PluginKind(Generic[Part]):
    """The parts of one kind: registered in-process, installed under `group`, and built in."""

    def __init__(
        self,
        noun: str,
        group: str,
        builtins: Sequence[Builtin],
        prepare: Callable[[object], Part] | None = None,
    ) -> None:
        """`noun` names one part in messages ("loader"); `prepare` turns what an entry point
        loads into a part, raising TypeError for something that is not one."""
        self.noun = noun
        self.group = group
        self._prepare: Callable[[object], Part] = prepare or (lambda obj: obj)  # type: ignore[assignment,return-value]
        self._registered: list[_Slot[Part]] = []
        self._installed: list[_Slot[Part]] | None = None
        self._builtins = [_Slot(b.name, self._loader(b)) for b in builtins]
        self._lock = threading.Lock()

    def register(self, name: str, part: Part) -> None:
        """Put `part` ahead of every other part, so it takes over `name` from installed and built-in ones."""
        self._registered.insert(0, _Slot(name, lambda: part))

    def get(self, name: str) -> Part | None:
        """The part called `name`, loading it (and only it) on first use; None if there is none.

        A part that fails to import raises here: the user asked for it by name.
        """
        for slot in self._slots():
            if slot.name == name:
                return slot.part()
        return None

    def parts(self) -> list[Part]:
        """Every part in lookup order (a taken-over name keeps its later parts behind the new one).

        A part that fails to load is skipped with one warning, so a broken plugin never stops
        Sourcebook from using the parts it ships with.
        """
        found: list[Part] = []
        for slot in self._slots():
            if slot.failed:
                continue
            try:
                found.append(slot.part())
            except Exception as exc:
                logger.warning("skipping %s plugin %r: %s", self.noun, slot.name, exc)
        return found

    def names(self) -> list[str]:
        """Every name a part is known by, sorted, without loading any part."""
        return sorted({slot.name for slot in self._slots()})

    @contextmanager
    def isolated(self) -> Iterator[None]:
        """A block whose registrations are undone at its end, and in which installed entry points
        are read afresh (for tests, including a third party's tests of its own plugin)."""
        registered, installed = list(self._registered), self._installed
        self._installed = None
        try:
            yield
        finally:
            self._registered[:], self._installed = registered, installed

    def _slots(self) -> list[_Slot[Part]]:
        return [*self._registered, *self._installed_slots(), *self._builtins]

    def _installed_slots(self) -> list[_Slot[Part]]:
        """The kind's entry points, read once, on first lookup (not at import: startup stays cheap)."""
        with self._lock:
            if self._installed is None:
                self._installed = [_Slot(point.name, self._loader(point)) for point in entry_points(group=self.group)]
            return self._installed

    def _loader(self, source: Builtin | EntryPoint) -> Callable[[], Part]:
        return lambda: self._prepare(source.load())
