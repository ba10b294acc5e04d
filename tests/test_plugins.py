"""The plugin registry: one mechanism for loaders, embedders, generators and stores.

Parts are registered in-process, installed through real entry points (a dist-info folder on
sys.path, found by importlib.metadata as pip-installed packages are), or built in; the
built-ins load through the same code, lazily, and nothing is read or imported at startup.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook.embedders import EMBEDDERS, create_embedder
from sourcebook.errors import ConfigurationError
from sourcebook.generators import GENERATORS, create_generator
from sourcebook.loaders import LOADERS, get_loader, parse, supported_extensions
from sourcebook.loaders.base import RawSource
from sourcebook.models import Block, ParsedDocument
from sourcebook.plugins import Builtin, PluginKind
from sourcebook.settings import Settings
from sourcebook.stores import STORES, open_store
from tests.installed_plugins import install_distribution

PLUGIN_MODULE = '''
from sourcebook.models import Block, ParsedDocument


class CsvLoader:
    name = "csv"
    media_types = ("text/csv",)
    extensions = (".csv",)

    def load(self, data, source):
        return ParsedDocument(source, "table", (Block("table", data.decode()),), "text/csv")


def embedder(settings):
    return ("plugin embedder", settings.embedding_model)


def generator(model, settings):
    return ("plugin generator", model)


def store(url):
    return ("plugin store", url)
'''


class _TsvLoader:
    name = "tsv"
    media_types = ("text/tab-separated-values",)
    extensions = (".tsv",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        return ParsedDocument(source, "table", (Block("table", data.decode()),), "text/tab-separated-values")


@pytest.fixture
def isolated_registry() -> Iterator[None]:
    with LOADERS.isolated(), EMBEDDERS.isolated(), GENERATORS.isolated(), STORES.isolated():
        yield


@pytest.mark.usefixtures("isolated_registry")
def test_a_part_of_each_kind_registers_through_the_registry() -> None:
    # Stand-ins, not real embedders, generators and stores: the test is about who gets called.
    LOADERS.register("tsv", _TsvLoader())
    EMBEDDERS.register("memo", lambda settings: ("memo embedder", settings.embedding_model))  # type: ignore[arg-type]
    GENERATORS.register("memo", lambda model, settings: ("memo generator", model))  # type: ignore[arg-type]
    STORES.register("memo", lambda url: ("memo store", url))  # type: ignore[arg-type]

    assert parse(RawSource.from_bytes("t.tsv", b"a\tb\n")).blocks[0].kind == "table"
    assert ".tsv" in supported_extensions()
    assert create_embedder(Settings(embedding_model="memo:small")) == ("memo embedder", "small")
    assert create_generator("memo:v1", Settings()) == ("memo generator", "v1")
    assert open_store("memo://x") == ("memo store", "memo://x")


@pytest.mark.usefixtures("isolated_registry")
def test_a_part_of_each_kind_installs_through_a_real_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution(
        tmp_path,
        monkeypatch,
        {
            "sourcebook.loaders": {"csv": "sourcebook_test_plugin:CsvLoader"},
            "sourcebook.embedders": {"plug": "sourcebook_test_plugin:embedder"},
            "sourcebook.generators": {"plug": "sourcebook_test_plugin:generator"},
            "sourcebook.stores": {"plug": "sourcebook_test_plugin:store"},
        },
        {"sourcebook_test_plugin": PLUGIN_MODULE},
    )
    assert get_loader(extension=".csv").name == "csv"  # type: ignore[union-attr]
    assert create_embedder(Settings(embedding_model="plug:small")) == ("plugin embedder", "small")
    assert create_generator("plug:v1", Settings()) == ("plugin generator", "v1")
    assert open_store("plug://x") == ("plugin store", "plug://x")
    assert "plug" in GENERATORS.names() and "plug" in STORES.names()


@pytest.mark.usefixtures("isolated_registry")
def test_installed_parts_take_over_built_in_names_and_registered_ones_take_over_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_distribution(
        tmp_path,
        monkeypatch,
        {"sourcebook.generators": {"openai": "sourcebook_test_plugin_two:generator"}},
        {"sourcebook_test_plugin_two": "def generator(model, settings):\n    return ('installed', model)\n"},
    )
    assert create_generator("openai:gpt", Settings()) == ("installed", "gpt")
    GENERATORS.register("openai", lambda model, settings: ("registered", model))  # type: ignore[arg-type,return-value]
    assert create_generator("openai:gpt", Settings()) == ("registered", "gpt")


def test_built_ins_are_declared_like_entry_points_and_load_only_when_looked_up() -> None:
    loaded: list[str] = []
    kind: PluginKind[str] = PluginKind(
        "thing", "sourcebook.test-things", [Builtin("a", "json:dumps"), Builtin("b", "json:loads")],
        prepare=lambda obj: loaded.append(obj.__name__) or obj.__name__,  # type: ignore[attr-defined]
    )
    assert kind.names() == ["a", "b"] and loaded == []
    assert kind.get("b") == "loads" and loaded == ["loads"]
    assert kind.get("b") == "loads" and loaded == ["loads"]  # loaded once
    assert kind.get("c") is None
    assert kind.parts() == ["dumps", "loads"]


def test_a_missing_extra_says_which_to_install() -> None:
    kind: PluginKind[object] = PluginKind(
        "store", "sourcebook.test-things",
        [Builtin("fancy", "no_such_module_xyz:open", extra="fancy", title="the Fancy store")],
    )
    with pytest.raises(ConfigurationError, match=r"the Fancy store needs the 'fancy' extra .*sourcebook\[fancy\]"):
        kind.get("fancy")


def test_parts_skip_a_broken_part_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    kind: PluginKind[object] = PluginKind(
        "thing", "sourcebook.test-things", [Builtin("broken", "no_such_module_xyz:x"), Builtin("fine", "json:dumps")]
    )
    with caplog.at_level(logging.WARNING):
        assert len(kind.parts()) == 1
        assert len(kind.parts()) == 1
    assert caplog.text.count("skipping thing plugin 'broken'") == 1
    with pytest.raises(ModuleNotFoundError):
        kind.get("broken")  # asked for by name: the error is the user's to see


def test_importing_sourcebook_reads_no_entry_points_and_imports_no_built_in_part() -> None:
    script = textwrap.dedent("""
        import importlib.metadata, sys
        read = []
        real = importlib.metadata.entry_points
        importlib.metadata.entry_points = lambda **kw: read.append(kw.get("group")) or real(**kw)
        import sourcebook, sourcebook.loaders, sourcebook.embedders, sourcebook.generators, sourcebook.stores
        parts = ["sourcebook.generators." + p for p in ("anthropic", "openai", "gemini", "llamacpp")]
        parts += ["sourcebook.embedders.hosted", "sourcebook.loaders.markdown", "sourcebook.loaders.pdf"]
        print([g for g in read if str(g).startswith("sourcebook")], [m for m in parts if m in sys.modules])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[] []"
