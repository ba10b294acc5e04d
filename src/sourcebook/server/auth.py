"""Who is calling: the API key behind a request, its tenant, and what its role allows.

Keys come in `Authorization: Bearer <key>` (or `X-API-Key: <key>`). Authorization is two
layers: the key's tenant picks the tenant-scoped knowledge base, so the store itself never
returns another tenant's rows; the key's grants decide which collections and actions of
that tenant it may use (checked here, in the routes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request

from ..apikeys import ALL_COLLECTIONS, ApiKey, KeyStore, Role
from ..tenants import DEFAULT_TENANT
from .errors import ForbiddenError, RateLimitedError, UnauthorizedError
from .ratelimit import RateLimits, retry_after_header

if TYPE_CHECKING:
    from ..stores.base import ChatSessionRecord


def local_key(tenant: str = DEFAULT_TENANT) -> ApiKey:
    """Who every caller is under `--no-auth`: an admin of the served knowledge base's tenant."""
    return ApiKey(id="local", prefix="", name="no-auth (loopback)", tenant=tenant,
                  grants={ALL_COLLECTIONS: Role.ADMIN}, created_at="")


@dataclass(frozen=True)
class Principal:
    """The caller of one request."""

    key: ApiKey
    rate_key: str

    @property
    def tenant(self) -> str:
        return self.key.tenant

    def require(self, role: Role, collection: str | None = None) -> None:
        """Raise 403 unless the key may act as `role` on `collection` (None: on all of them)."""
        if not self.key.allows(role, collection):
            where = f"collection {collection!r}" if collection is not None else "every collection"
            raise ForbiddenError(
                f"API key {self.key.prefix or self.key.id} has no {role} role on {where}; "
                f"ask an admin for a key that covers it"
            )

    def require_somewhere(self, role: Role) -> None:
        """Raise 403 unless the key holds `role` on at least one collection."""
        if not any(granted.includes(role) for granted in self.key.grants.values()):
            raise ForbiddenError(f"API key {self.key.prefix or self.key.id} has no {role} role on any collection")

    def require_session(self, role: Role, session: ChatSessionRecord) -> None:
        """Raise 403 unless the key holds `role` on every collection the chat session was used in
        ("*": on every collection). A session used in none yet holds only its title: any key of
        the tenant with `role` somewhere may use it (its first turn scopes it)."""
        if not session.collections:
            self.require_somewhere(role)
        for collection in _granted_names(session):
            self.require(role, collection)

    def may_see_session(self, session: ChatSessionRecord) -> bool:
        """Whether the key may read the chat session (what a listing shows)."""
        return all(self.key.allows(Role.READ, collection) for collection in _granted_names(session))

    def read_scope(self, requested: str | Sequence[str] | None) -> list[str] | None:
        """The collections a read may cover: the ones asked for (each must be readable), else all
        the key may read (None = no restriction)."""
        if requested is None:
            readable = self.key.readable()
            return None if readable is None else list(readable)
        names = [requested] if isinstance(requested, str) else list(requested)
        for name in names:
            self.require(Role.READ, name)
        return names


def _granted_names(session: ChatSessionRecord) -> list[str | None]:
    """A session's collections as grants name them: "*" (every collection) is None."""
    return [None if name == ALL_COLLECTIONS else name for name in session.collections]


def bearer_secret(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("x-api-key") or None


def authenticate(
    request: Request, keys: KeyStore | None, limits: RateLimits, local_tenant: str = DEFAULT_TENANT
) -> Principal:
    """The request's principal, after its rate limits (its key's and its tenant's); 401 without a
    live key, 429 over either limit, saying which.
    Without a key store (`--no-auth`) every caller is an admin of `local_tenant`."""
    if keys is None:
        client = request.client.host if request.client else "local"
        principal = Principal(local_key(local_tenant), f"client:{client}")
    else:
        secret = bearer_secret(request)
        if secret is None:
            raise UnauthorizedError(
                "this request needs an API key: send 'Authorization: Bearer <key>' (create one with `sourcebook keys create`)",
                {"WWW-Authenticate": "Bearer"},
            )
        key = keys.authenticate(secret)
        if key is None:
            raise UnauthorizedError("the API key is unknown or revoked", {"WWW-Authenticate": "Bearer"})
        principal = Principal(key, f"key:{key.id}")
    refusal = limits.acquire(principal.rate_key, principal.tenant)
    if refusal is not None:
        raise RateLimitedError(refusal.message, {"Retry-After": retry_after_header(refusal.wait)})
    return principal
