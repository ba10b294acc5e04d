"""Keeping a collection in sync with a folder while its files change (`sourcebook watch`, and
the server's `watch` setting).

The watcher works on the folder's state, not on the events' story: watchfiles (inotify, FSEvents
or polling) only says which paths changed, batched until the folder has been quiet for a moment
(`settle`); each path is then looked at as it is now. So an editor's save dance (write a temp
file, rename the old one away, rename the temp over it) comes out as one `updated` or none, and
a move is recognised by content: a new file holding exactly what a vanished document stored is
that document under a new name (`KnowledgeBase.move`: nothing is embedded again).

It catches up with `KnowledgeBase.sync` once the watch is live, so changes made while no watcher
ran are picked up at start and none made during the catch-up is lost. One file's error is one
reported change; the watcher goes on.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from .errors import LoaderError, SourceNotFoundError, SourcebookError
from .identity import normalize_source
from .kb import DEFAULT_COLLECTION, KnowledgeBase
from .loaders import excluded_path, expand_sources, supported_extensions, wanted_file
from .models import DocumentRecord, IngestResult

logger = logging.getLogger(__name__)

SETTLE_SECONDS = 0.25
"""How long the folder must be quiet before a batch of changes is applied: long enough to
coalesce an editor's save (milliseconds), short enough to apply a change well within a second."""
MAX_WAIT_SECONDS = 1.6
"""The longest a batch waits while changes keep coming (a large copy), so work starts anyway."""
_POLL_SECONDS = 0.5
"""How often an idle watch wakes (watchfiles' timeout): its first wake runs the catch-up sync."""


@dataclass(frozen=True)
class FolderChange:
    """One change the watcher made to the collection: `action` is "added", "updated", "renamed",
    "removed" or "failed"; `path` is relative to the watched folder (`previous` too, for a rename)."""

    action: str
    path: str
    previous: str | None = None
    chunks: int = 0
    embedded: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def line(self) -> str:
        """The one log line: "added a.md (3 chunks)", "renamed a.md -> b.md", "failed a.md: why"."""
        if self.action == "failed":
            return f"failed {self.path}: {self.error}"
        if self.action == "renamed":
            return f"renamed {self.previous} -> {self.path}"
        if self.action in ("added", "updated"):
            embedded = f", {self.embedded} embedded" if self.action == "updated" else ""
            return f"{self.action} {self.path} ({self.chunks} chunks{embedded})"
        return f"{self.action} {self.path}"


Report = Callable[[FolderChange], None]


class FolderWatcher:
    """Mirrors the folder `directory` into `collection` of `kb`: `run` until stopped."""

    def __init__(
        self, kb: KnowledgeBase, directory: str, collection: str = DEFAULT_COLLECTION, report: Report | None = None
    ) -> None:
        self.kb = kb
        self.root = normalize_source(directory)
        if not os.path.isdir(self.root):
            reason = "is not a folder" if os.path.exists(self.root) else "folder not found"
            raise SourceNotFoundError(directory, f"{reason}: only a folder can be watched")
        self.collection = collection
        self.report = report or (lambda change: logger.info("%s", change.line()))
        self.ready = threading.Event()
        """Set once the watch is live and the catch-up sync is done (tests and the server wait on it)."""

    def run(self, stop: threading.Event | None = None) -> None:
        """Catch up, then apply changes until `stop` is set (or Ctrl-C, which ends it cleanly)."""
        from watchfiles import watch  # imported here: only watching needs it

        batches = watch(
            self.root, watch_filter=self._relevant, step=int(SETTLE_SECONDS * 1000), debounce=int(MAX_WAIT_SECONDS * 1000),
            stop_event=stop, rust_timeout=int(_POLL_SECONDS * 1000), yield_on_timeout=True, raise_interrupt=False,
        )
        try:
            for batch in batches:  # the first batch (or wake) comes once the watch is live
                if not self.ready.is_set():
                    self._guarded(self.catch_up)
                    self.ready.set()
                if batch:
                    self._guarded(lambda: self.apply(path for _, path in batch))
        except OSError as exc:  # the watch itself failed: the system's limit on watches reached, say
            raise LoaderError(self.root, f"cannot watch the folder: {exc}") from exc

    def _guarded(self, step: Callable[[], list[FolderChange]]) -> None:
        """Report what `step` changed; an error that stopped the whole step (the database
        unreachable, say) is reported as one failed change, and the watch goes on."""
        try:
            changes = step()
        except SourcebookError as exc:
            changes = [FolderChange("failed", ".", error=str(exc))]
        for change in changes:
            self.report(change)

    def catch_up(self) -> list[FolderChange]:
        """Sync the whole folder (`KnowledgeBase.sync`): what changed while nobody watched. Files
        moved meanwhile are moved first, so they keep their documents as under a running watch."""
        stored = self._stored()
        gone = {path: record for path, record in stored.items() if not os.path.exists(path)}
        found = expand_sources([self.root], self.kb.settings.include, self.kb.settings.exclude) if gone else []
        changes = self._moves({normalize_source(p): None for p in found if self._wanted(p)}, gone, stored)
        return changes + self._changes(self.kb.sync(self.root, self.collection))

    def apply(self, paths: Iterable[str]) -> list[FolderChange]:
        """Bring the collection in line with `paths` as they are now: files to add or update,
        documents whose file (or folder) is gone, and among those, files that were moved."""
        stored = self._stored()
        present: dict[str, None] = {}
        gone: dict[str, DocumentRecord] = {}
        for path in sorted(set(paths)):
            if os.path.isdir(path):
                found = expand_sources([path], self.kb.settings.include, self.kb.settings.exclude)
                present.update((normalize_source(p), None) for p in found if self._wanted(p))
            elif os.path.isfile(path):
                if self._wanted(path):
                    present[normalize_source(path)] = None
            elif path in stored:
                gone[path] = stored[path]
            else:  # a vanished folder: every document below it
                below = path + os.sep
                gone.update(
                    (known, record) for known, record in stored.items()
                    if known.startswith(below) and not os.path.exists(known)
                )
        changes = self._moves(present, gone, stored)
        if present:
            changes += self._changes(self.kb.add(list(present), self.collection))
        for path, record in gone.items():
            try:
                self.kb.remove(record.id)
            except SourcebookError as exc:
                changes.append(FolderChange("failed", self._relative(path), error=str(exc)))
            else:
                changes.append(FolderChange("removed", self._relative(path)))
        return changes

    def _moves(
        self, present: dict[str, None], gone: dict[str, DocumentRecord], stored: dict[str, DocumentRecord]
    ) -> list[FolderChange]:
        """Move each vanished document to a new file holding exactly its stored content (taking
        both out of `present` and `gone`). The stored size picks candidates; `KnowledgeBase.move`
        checks the content hash and refuses other content."""
        changes: list[FolderChange] = []
        fresh = [path for path in present if path not in stored] if gone else []
        for path in fresh:
            try:
                size = os.path.getsize(path)
            except OSError:
                continue
            for old, record in list(gone.items()):
                if record.metadata.get("size") != size:
                    continue
                try:
                    moved = self.kb.move(record.id, path)
                except SourcebookError:
                    continue  # other content (or unreadable): added below, the old one removed
                del gone[old], present[path]
                changes.append(FolderChange("renamed", self._relative(path), self._relative(old), moved.chunk_count))
                break
        return changes

    def _stored(self) -> dict[str, DocumentRecord]:
        """The collection's documents read from files under the folder, by path."""
        below = self.root + os.sep
        records = self.kb.documents(self.collection) if self._collection_exists() else []
        return {path: r for r in records if isinstance(path := r.metadata.get("path"), str) and path.startswith(below)}

    def _collection_exists(self) -> bool:
        return any(info.name == self.collection for info in self.kb.collections())

    def _relevant(self, _change: object, path: str) -> bool:
        """What watchfiles passes on: anything inside the folder that is not excluded (hidden
        files, .git, node_modules); folders pass too, as a moved folder is one event."""
        return not excluded_path(self.root, path, self.kb.settings.exclude)

    def _wanted(self, path: str) -> bool:
        """A file `sync` would take (include and exclude patterns) that some loader reads."""
        settings = self.kb.settings
        return wanted_file(self.root, path, settings.include, settings.exclude) and (
            os.path.splitext(path)[1].lower() in supported_extensions()
        )

    def _relative(self, path: str) -> str:
        return os.path.relpath(path, self.root)

    def _changes(self, results: list[IngestResult]) -> list[FolderChange]:
        """The reportable ones among ingestion results (an unchanged file is no change)."""
        return [
            FolderChange(r.action, self._relative(r.source), None, r.chunks, r.embedded, _cause(r))
            for r in results if r.action in ("added", "updated", "removed", "failed")
        ]


def _cause(result: IngestResult) -> str | None:
    """A failure's cause without the absolute path it starts with (the line names the file)."""
    prefix = result.source + ": "
    return result.error[len(prefix):] if result.error and result.error.startswith(prefix) else result.error


class Watchers:
    """Folder watchers each in a daemon thread of its own (the server's `watch` setting)."""

    def __init__(self, watchers: Iterable[FolderWatcher]) -> None:
        self.watchers = list(watchers)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for watcher in self.watchers:
            logger.info("watching %s into collection %s", watcher.root, watcher.collection)
            thread = threading.Thread(
                target=self._watch, args=(watcher,), name=f"sourcebook-watch-{watcher.collection}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _watch(self, watcher: FolderWatcher) -> None:
        try:
            watcher.run(self._stop)
        except SourcebookError as exc:  # the server goes on; its log says this folder is no longer watched
            logger.error("stopped watching %s: %s", watcher.root, exc)

    def stop(self) -> None:
        """Stop every watch and wait for it: a batch being applied is finished first."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self._threads.clear()
