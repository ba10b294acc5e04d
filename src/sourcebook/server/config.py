"""The HTTP service's own settings (`SOURCEBOOK_SERVER_*` variables, or `sourcebook serve` options).

Kept apart from the knowledge base's `Settings`: they shape the service, not retrieval, and
the library never needs them.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ..kb import DEFAULT_COLLECTION


class Quota(BaseModel):
    """What one tenant may use (None: no limit); server/usage.py enforces it."""

    model_config = ConfigDict(extra="forbid")

    requests_per_day: int | None = Field(None, ge=0, description="authenticated requests per UTC day")
    tokens_per_month: int | None = Field(None, ge=0, description="LLM tokens (in + out) per UTC calendar month")


class ServerSettings(BaseSettings):
    """Limits, CORS and auth of `sourcebook serve`, with defaults for a small team."""

    model_config = SettingsConfigDict(env_prefix="SOURCEBOOK_SERVER_", extra="ignore")

    auth: bool = Field(True, description="require an API key; False serves everyone as admin (loopback only)")
    rate_limit_per_second: float = Field(20.0, gt=0, description="requests a key may make per second, sustained")
    rate_limit_burst: int = Field(40, ge=1, description="requests a key may make at once before being limited")
    tenant_rate_limit_per_second: float = Field(
        100.0, gt=0, description="requests all keys of a tenant may make per second together, sustained"
    )
    tenant_rate_limit_burst: int = Field(200, ge=1, description="requests all keys of a tenant may make at once")
    max_request_bytes: int = Field(1024 * 1024, ge=1024, description="largest request body other than an upload")
    max_upload_bytes: int = Field(50 * 1024 * 1024, ge=1024, description="largest multipart upload (all files together)")
    max_upload_files: int = Field(100, ge=1, description="most files in one upload request")
    cors_origins: list[str] = Field(default_factory=list, description="origins allowed to call the API from a browser")
    upload_dir: str | None = Field(None, description="where uploaded files are kept; default: next to the database")
    status_poll_seconds: float = Field(0.25, gt=0, description="how often a status stream looks for changes")
    log_json: bool = Field(True, description="one JSON object per log line")
    quota_requests_per_day: int | None = Field(
        None, ge=0, description="every tenant's requests per UTC day (429 beyond; None = no quota)"
    )
    quota_tokens_per_month: int | None = Field(
        None, ge=0, description="every tenant's LLM tokens (in + out) per UTC month (429 beyond; None = no quota)"
    )
    tenant_quotas: dict[str, Quota] = Field(
        default_factory=dict,
        description='per-tenant quotas replacing the defaults, e.g. {"acme": {"requests_per_day": 5000}} (JSON)',
    )
    query_cache_entries: int = Field(
        1024, ge=0,
        description="query embeddings, search results and answers kept in memory (about 20 MB at 1,024); "
        "0 = off; a knowledge base's own query_cache_entries, when larger, wins",
    )

    watch: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="folders kept in sync for the served tenant while the server runs, each DIR or DIR:COLLECTION "
        "(default collection: default); in the environment comma-separated: SOURCEBOOK_SERVER_WATCH=docs,hr:people",
    )

    @field_validator("watch", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """A variable's "a,b:c" is the list ["a", "b:c"] (a JSON list would be a chore to write)."""
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value

    def watched_folders(self) -> list[tuple[str, str]]:
        """(folder, collection) for each `watch` entry. A colon followed by a name that holds no
        path separator names the collection, so a folder's own colons ("C:/docs") stay its own."""
        folders = []
        for entry in self.watch:
            folder, colon, collection = entry.rpartition(":")
            if not colon or not folder or not collection or "/" in collection or os.sep in collection:
                folder, collection = entry, DEFAULT_COLLECTION
            folders.append((folder, collection))
        return folders

    def quota_for(self, tenant: str) -> Quota:
        """The tenant's own quota if it has one, else the defaults every tenant gets."""
        return self.tenant_quotas.get(tenant) or Quota(
            requests_per_day=self.quota_requests_per_day, tokens_per_month=self.quota_tokens_per_month
        )
