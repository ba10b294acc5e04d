"""Indexes derived from the store: vector codes and an approximate index, keyword segments.

SQLite is the truth; everything here is rebuilt from it when missing or stale, and catches
up with a write through the store's change log (stores/sqlite/changes.py) instead of
rebuilding (DESIGN.md, "Storage").
"""
