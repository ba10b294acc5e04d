"""The embedded SQLite store (store.py) and its API key store (keys.py)."""

from .keys import SQLiteKeyStore
from .store import SQLiteStore

__all__ = ["SQLiteKeyStore", "SQLiteStore"]
