"""`sourcebook keys` in-process, and `sourcebook serve` as a real process on a free port."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from sourcebook.cli import app

runner = CliRunner()


def run(*args: str, ok: bool = True) -> str:
    result = runner.invoke(app, list(args))
    assert (result.exit_code == 0) == ok, result.output
    return result.stdout


def test_keys_create_list_revoke(tmp_path: Path) -> None:
    db = str(tmp_path / "kb.db")
    created = json.loads(run("--db", db, "keys", "create", "--tenant", "acme", "--role", "write", "-c", "docs", "--name", "ci", "--json"))
    assert created["secret"].startswith("sb_") and created["key"]["grants"] == {"docs": "write"}
    plain = run("--db", db, "keys", "create")  # the secret alone on stdout, for scripts: KEY=$(sourcebook keys create)
    assert re.fullmatch(r"sb_[A-Za-z0-9_-]{43}\n", plain)
    listed = json.loads(run("--db", db, "keys", "list", "--json"))["keys"]
    assert [k["tenant"] for k in listed] == ["acme", "default"]
    assert listed[1]["grants"] == {"*": "read"} and "secret" not in listed[0]
    assert created["secret"] not in Path(db).read_bytes().decode("latin-1")  # only the hash is stored
    assert json.loads(run("--db", db, "keys", "list", "--tenant", "acme", "--json"))["keys"][0]["name"] == "ci"
    revoked = json.loads(run("--db", db, "keys", "revoke", created["key"]["prefix"], "--json"))["revoked"]
    assert revoked["id"] == created["key"]["id"] and revoked["revoked_at"]
    assert [k["tenant"] for k in json.loads(run("--db", db, "keys", "list", "--json"))["keys"]] == ["default"]
    assert len(json.loads(run("--db", db, "keys", "list", "--all", "--json"))["keys"]) == 2
    error = json.loads(run("--db", db, "keys", "revoke", "nope", "--json", ok=False))
    assert error["error"]["code"] == "api_key_not_found"
    assert json.loads(run("--db", db, "keys", "create", "--role", "owner", "--json", ok=False))["error"]["code"] == "invalid_grant"
    assert json.loads(run("--db", db, "keys", "create", "-t", "Bad Name", "--json", ok=False))["error"]["code"] == "invalid_tenant"
    from_global = json.loads(run("--db", db, "--tenant", "globex", "keys", "create", "--json"))["key"]
    assert from_global["tenant"] == "globex"


def test_no_auth_refuses_a_public_address(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--db", str(tmp_path / "kb.db"), "serve", "--no-auth", "--host", "0.0.0.0"])
    assert result.exit_code != 0 and "loopback" in result.output


def _sourcebook() -> list[str]:
    return [sys.executable, "-c", "from sourcebook.cli import app; app()"]


@pytest.mark.parametrize("no_auth", [False, True], ids=["keys", "no-auth"])
def test_serve_runs_a_real_server(tmp_path: Path, no_auth: bool) -> None:
    db = str(tmp_path / "kb.db")
    secret = json.loads(run("--db", db, "keys", "create", "--json"))["secret"]
    command = [*_sourcebook(), "serve", "--db", db, "--port", "0", *(["--no-auth"] if no_auth else [])]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", banner)
        assert match, banner
        url = match.group(1)
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.get("/healthz").json()["auth"] is (not no_auth)
            anonymous = client.get("/v1/collections")
            assert anonymous.status_code == (200 if no_auth else 401)
            keyed = client.get("/v1/collections", headers={"Authorization": f"Bearer {secret}"})
            assert keyed.status_code == 200 and keyed.headers["x-request-id"]
        process.terminate()
        assert process.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a graceful stop
        log = [json.loads(line) for line in process.stderr.read().splitlines() if line.startswith("{")]
        assert any(entry["message"] == "Application shutdown complete." for entry in log)
        access = [entry for entry in log if entry["logger"] == "sourcebook.server.access"]
        assert {entry["route"] for entry in access} == {"/healthz", "/v1/collections"}
        assert all(entry["request_id"] != "-" and "duration_ms" in entry for entry in access)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
