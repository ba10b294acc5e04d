"""The `Loader` protocol: bytes of one source in, a `ParsedDocument` out.

Loaders are pure functions of their input (no I/O of their own), which keeps them
easy to test and lets URL and file sources share them. Dispatch by media type and
file extension happens in `loaders/__init__.py`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..models import ParsedDocument


@runtime_checkable
class Loader(Protocol):
    name: str
    media_types: tuple[str, ...]
    extensions: tuple[str, ...]

    def load(self, data: bytes, source: str) -> ParsedDocument:
        """Parse `data` read from `source` (a path or URL, used in errors and titles).

        Raises a LoaderError subclass naming `source` and the cause.
        """
