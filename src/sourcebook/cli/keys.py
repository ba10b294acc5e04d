"""`sourcebook keys`: create, list and revoke the HTTP service's API keys.

The secret is printed once, at creation; the database keeps only its hash and a prefix that
identifies the key in listings. `create` may create the knowledge base (keys before
documents is a normal order); `list` and `revoke` need an existing one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..apikeys import ApiKey, KeyStore, Role, make_grants
from ._common import JsonOpt, emit_json, err, examples, open_kb, out

group = typer.Typer(
    help="API keys of the HTTP service (`sourcebook serve`).",
    no_args_is_help=True,
    epilog=examples("sourcebook keys create --name ci", "sourcebook keys list", "sourcebook keys revoke KEY_ID"),
)


@contextmanager
def _keys(ctx: typer.Context, *, must_exist: bool) -> Iterator[tuple[KeyStore, str]]:
    """The key store of the knowledge base the global options name, and that base's tenant."""
    with open_kb(ctx, must_exist=must_exist) as kb:
        store = kb.api_keys()
        try:
            yield store, kb.tenant
        finally:
            store.close()


def _grants(key: ApiKey) -> str:
    return ", ".join(f"{collection}={role}" for collection, role in sorted(key.grants.items()))


@group.command("create", epilog=examples(
    "KEY=$(sourcebook keys create --name ci)",
    "sourcebook keys create --tenant acme --role write -c docs --json",
))
def create(
    ctx: typer.Context,
    tenant: Annotated[
        Optional[str], typer.Option("--tenant", "-t", help="Tenant whose documents the key reaches (else the global --tenant).")
    ] = None,
    role: Annotated[str, typer.Option("--role", "-r", help="read, write or admin.")] = Role.READ.value,
    collection: Annotated[
        Optional[list[str]], typer.Option("--collection", "-c", help="Collection the role applies to (repeat; default: all).")
    ] = None,
    name: Annotated[str, typer.Option("--name", "-n", help="A note saying who or what uses the key.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create a key and print its secret (shown this once only)."""
    with _keys(ctx, must_exist=False) as (store, default_tenant):
        created = store.create(name, tenant or default_tenant, make_grants(role, tuple(collection or ())))
    if as_json:
        emit_json({"key": created.key.to_dict(), "secret": created.secret})
        return
    out.print(created.secret, highlight=False, markup=False)
    err.print(
        f"[dim]key {created.key.id} ({created.key.prefix}…) for tenant {created.key.tenant}: {_grants(created.key)}. "
        f"The secret is not stored: keep it now.[/dim]", highlight=False,
    )


@group.command("list", epilog=examples("sourcebook keys list", "sourcebook keys list --tenant acme --all --json"))
def list_keys(
    ctx: typer.Context,
    tenant: Annotated[Optional[str], typer.Option("--tenant", "-t", help="Only this tenant's keys.")] = None,
    show_revoked: Annotated[bool, typer.Option("--all", help="Include revoked keys.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List keys (never their secrets)."""
    with _keys(ctx, must_exist=True) as (store, _):
        keys = store.list(tenant, include_revoked=show_revoked)
    if as_json:
        emit_json({"keys": [key.to_dict() for key in keys]})
        return
    table = Table("id", "prefix", "tenant", "grants", "name", "created", "revoked")
    for key in keys:
        table.add_row(key.id, key.prefix, key.tenant, _grants(key), key.name, key.created_at[:19], (key.revoked_at or "")[:19])
    out.print(table)


@group.command("revoke", epilog=examples("sourcebook keys revoke sb_AbCd", "sourcebook keys revoke KEY_ID --json"))
def revoke(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The key's id or prefix (see `sourcebook keys list`).")],
    as_json: JsonOpt = False,
) -> None:
    """Revoke a key: requests with it are refused from now on."""
    with _keys(ctx, must_exist=True) as (store, _):
        revoked = store.revoke(key)
    if as_json:
        emit_json({"revoked": revoked.to_dict()})
    else:
        out.print(f"revoked {revoked.id} ({revoked.prefix}…)", highlight=False)
