"""The Postgres store (psycopg, pgvector): import it only when the 'postgres' extra is installed."""

from .filters import filter_sql
from .keys import PostgresKeyStore
from .keywords import keyword_sql
from .store import PostgresStore, open_postgres
from .vectors import HnswSettings, vector_query

__all__ = [
    "HnswSettings",
    "PostgresKeyStore",
    "PostgresStore",
    "filter_sql",
    "keyword_sql",
    "open_postgres",
    "vector_query",
]
