"""Loaders: turn files, folders and URLs into ParsedDocuments.

`expand_sources` -> `read_source` -> `parse` is the ingestion path (`loaders.sources`);
`LOADERS`, `get_loader` and `register_loader` make formats pluggable, also through the
`sourcebook.loaders` entry-point group (`loaders.base`, on the registry of
`sourcebook.plugins`). URL fetching lives in `loaders.url`.
"""

from .base import LOADERS, Loader, RawSource, get_loader, register_loader, supported_extensions
from .beir import count_beir, iter_beir
from .sources import (
    READER_METADATA, SourceIdentity, excluded_path, expand_sources, identify_source, is_url, load_source, parse, read_source,
    wanted_file,
)

__all__ = [
    "LOADERS",
    "READER_METADATA",
    "Loader",
    "RawSource",
    "count_beir",
    "excluded_path",
    "expand_sources",
    "get_loader",
    "is_url",
    "iter_beir",
    "load_source",
    "parse",
    "read_source",
    "identify_source",
    "SourceIdentity",
    "register_loader",
    "supported_extensions",
    "wanted_file",
]
