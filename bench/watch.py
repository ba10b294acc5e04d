"""How soon `sourcebook watch` shows a change: seconds from a file operation until the collection
reflects it, for a created, a changed, a renamed and a deleted file.

A `FolderWatcher` runs in a thread over a temporary folder and a real SQLite knowledge base with
the bundled model (loaded before timing); each round writes a note of a few paragraphs, changes
one paragraph, renames it and deletes it, polling the knowledge base every 10 ms. Prints the
median and the worst of `--rounds` rounds per operation. The watcher waits `SETTLE_SECONDS` of
quiet before applying a batch, so that is the floor.

    python bench/watch.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from sourcebook import KnowledgeBase  # noqa: E402
from sourcebook.watching import SETTLE_SECONDS, FolderWatcher  # noqa: E402

PARAGRAPH = "Paragraph {n} of note {round}: the office policy on {topic} is reviewed every spring by the team.\n\n"


def note(round_number: int, topic: str) -> str:
    return "".join(PARAGRAPH.format(n=n, round=round_number, topic=topic) for n in range(5))


def timed(action: Callable[[], None], done: Callable[[], bool]) -> float:
    started = time.perf_counter()
    action()
    while not done():
        if time.perf_counter() - started > 30:
            raise RuntimeError("the change never showed")
        time.sleep(0.01)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "notes"
        folder.mkdir()
        kb = KnowledgeBase.open(Path(scratch) / "kb.db")
        kb.embedder.embed_query("warm up")
        watcher = FolderWatcher(kb, str(folder), "notes", report=lambda change: None)
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        watcher.ready.wait()

        def names() -> dict[str, str | None]:
            return {Path(r.source).name: r.content_hash for r in kb.documents("notes") if r.status == "ready"} \
                if any(c.name == "notes" for c in kb.collections()) else {}

        seconds: dict[str, list[float]] = {"created": [], "changed": [], "renamed": [], "deleted": []}
        for n in range(args.rounds):
            a, b = folder / f"a{n}.md", folder / f"b{n}.md"
            seconds["created"].append(timed(lambda: a.write_text(note(n, "travel")), lambda: a.name in names()))
            before = names()[a.name]
            seconds["changed"].append(timed(lambda: a.write_text(note(n, "leave")), lambda: names().get(a.name) not in (None, before)))
            seconds["renamed"].append(timed(lambda: a.rename(b), lambda: set(names()) == {b.name}))
            seconds["deleted"].append(timed(b.unlink, lambda: not names()))
        stop.set()
        thread.join()
        kb.close()
    print(f"settle time {SETTLE_SECONDS:g} s, {args.rounds} rounds")
    for operation, values in seconds.items():
        print(f"{operation:8} median {statistics.median(values):.2f} s, worst {max(values):.2f} s")


if __name__ == "__main__":
    main()
