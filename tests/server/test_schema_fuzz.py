"""Property-based fuzzing of the live API from its own /openapi.json (schemathesis).

Every operation gets generated requests, valid and invalid; every response must be
documented (status, content type, body schema) and none may be a 5xx. Bounded to
EXAMPLES per operation and mode so the run stays under a minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection

from sourcebook import KnowledgeBase
from sourcebook.apikeys import make_grants
from sourcebook.server import ServerSettings, create_app
from sourcebook.stores.sqlite import SQLiteKeyStore
from tests.server.conftest import LiveServer

EXAMPLES = 10
HANDBOOK = Path(__file__).resolve().parents[2] / "examples" / "docs" / "employee-handbook.md"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server with one document and an admin key; limits high enough not to rate-limit the fuzzer."""
    db = str(tmp_path_factory.mktemp("fuzz") / "kb.db")
    with KnowledgeBase.open(db) as kb:
        kb.add(str(HANDBOOK))
        keys = SQLiteKeyStore(db)
        secret = keys.create("fuzz", "default", make_grants("admin")).secret
        server_settings = ServerSettings(log_json=False, rate_limit_per_second=10_000, rate_limit_burst=10_000)
        with LiveServer(create_app(kb, server_settings, keys)) as server:
            yield server.url, secret
        keys.close()


def fuzz(operation: APIOperation, mode: GenerationMode, secret: str) -> None:
    """EXAMPLES generated requests to one operation, each answer checked against the schema."""
    # Multipart carries only text and files: a "boolean" collection arrives as the text "false",
    # which the schema allows, so invalid types cannot be sent to the upload route.
    excluded = [negative_data_rejection] if operation.label == "POST /v1/documents" else []

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(headers={"Authorization": f"Bearer {secret}"}, excluded_checks=excluded)

    check()


@pytest.mark.slow  # about 25 s per mode on 2 busy cores
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_schema(live: tuple[str, str], mode: GenerationMode) -> None:
    """Runs every operation's examples, then reports every operation that failed (not only the first)."""
    url, secret = live
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    failures: dict[str, str] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        try:
            fuzz(operation, mode, secret)
        except Unsatisfiable:  # nothing in this operation can be made invalid (say, one free-form path id)
            assert mode is GenerationMode.NEGATIVE, operation.label
        except Exception as exc:  # noqa: BLE001 - collected, reported together below
            failures[operation.label] = str(exc)[:2000]
    assert not failures, "\n\n".join(f"{label}:\n{message}" for label, message in failures.items())
