"""Reading files, choosing loaders, the registry and folder expansion."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sourcebook.errors import EmptyDocumentError, FileTooLargeError, LoaderError, UnsupportedFormatError
from sourcebook.loaders import (
    LOADERS,
    RawSource,
    expand_sources,
    get_loader,
    load_source,
    parse,
    read_source,
    register_loader,
)
from sourcebook.models import Block, ParsedDocument
from sourcebook.settings import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, Settings
from tests.installed_plugins import install_distribution


@pytest.fixture
def settings() -> Settings:
    return Settings()


# --- read_source -----------------------------------------------------------------------


def test_read_file_fingerprint_and_metadata(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "note.md"
    path.write_bytes(b"# Hi\n\ntext\n")
    raw = read_source(str(path), settings)
    assert raw.source == str(path)
    assert raw.data == b"# Hi\n\ntext\n"
    assert raw.fingerprint == hashlib.sha256(raw.data).hexdigest()
    assert raw.media_type is None
    assert raw.metadata["path"] == str(path.resolve())
    assert raw.metadata["size"] == 11
    assert raw.metadata["mtime"].endswith("+00:00")


def test_relative_source_stays_as_given(tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("a.txt").write_text("hello")
    raw = read_source("a.txt", settings)
    assert raw.source == "a.txt" and raw.metadata["path"] == str(tmp_path / "a.txt")


def test_missing_file(tmp_path: Path, settings: Settings) -> None:
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(LoaderError, match="file not found") as info:
        read_source(missing, settings)
    assert info.value.source == missing


def test_directory_is_not_a_file(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(LoaderError, match="is a directory"):
        read_source(str(tmp_path), settings)


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 2048)
    monkeypatch.setattr(Path, "open", lambda *a, **k: pytest.fail("read a file known to be too large"))
    with pytest.raises(FileTooLargeError, match=r"2,048 bytes, over the limit of 1,000 bytes") as info:
        read_source(str(path), Settings(max_file_bytes=1000))
    assert info.value.code == "file_too_large"


# --- parse -------------------------------------------------------------------------


def _raw(source: str, data: bytes, media_type: str | None = None) -> RawSource:
    return RawSource.from_bytes(source, data, media_type)


@pytest.mark.parametrize(
    ("source", "media_type", "parsed_as"),
    [
        ("notes/README.MD", None, "text/markdown"),
        ("page.HTM", None, "text/html"),
        ("a.rst", None, "text/plain"),
        ("https://example.com/post", "text/html; charset=utf-8", "text/html"),
        ("https://example.com/doc.md", "text/markdown", "text/markdown"),
        # generic server labels defer to the extension
        ("https://example.com/raw/guide.md", "text/plain; charset=utf-8", "text/markdown"),
        ("https://example.com/raw/guide.txt", "application/octet-stream", "text/plain"),
        ("https://example.com/raw/no-extension", "text/plain", "text/plain"),
    ],
)
def test_loader_choice_by_media_type_then_extension(source: str, media_type: str | None, parsed_as: str) -> None:
    assert parse(_raw(source, b"# Title\n\nBody text.", media_type)).media_type == parsed_as


def test_get_loader() -> None:
    assert get_loader(extension="MD").name == "markdown"  # type: ignore[union-attr]
    assert get_loader(media_type="Application/PDF").name == "pdf"  # type: ignore[union-attr]
    assert get_loader(media_type="video/mp4", extension=".html").name == "html"  # type: ignore[union-attr]
    assert get_loader(media_type="video/mp4") is None and get_loader() is None
    assert get_loader(media_type="image/png").name == get_loader(extension=".TIF").name == "image"  # type: ignore[union-attr]


def test_unknown_format_without_hints_is_unsupported() -> None:
    with pytest.raises(UnsupportedFormatError, match="media type 'application/octet-stream', no file extension"):
        parse(_raw("https://example.com/download", b"# Title", "application/octet-stream"))


def test_content_is_sniffed_when_nothing_names_the_format(make_pdf: Callable[..., bytes]) -> None:
    assert parse(_raw("download", make_pdf([["Sniffed PDF text."]]))).media_type == "application/pdf"
    html = b"\xef\xbb\xbf  <!DOCTYPE html><html><body><p>Sniffed page</p></body></html>"
    assert parse(_raw("https://example.com/page", html, "application/octet-stream")).blocks[0].text == "Sniffed page"


def test_unsupported_extension_lists_the_supported_ones(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "report.pages"  # Apple Pages: a zip package no loader reads
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(UnsupportedFormatError) as info:
        load_source(str(path), settings)
    message = str(info.value)
    assert str(path) in message and "'.pages'" in message
    for extension in (".md", ".html", ".pdf", ".txt", ".docx", ".xlsx", ".epub", ".eml"):
        assert extension in message


def test_raw_metadata_is_merged_into_the_document(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "a.txt"
    path.write_text("Hello there.")
    doc = load_source(str(path), settings)
    assert doc.metadata["encoding"] == "utf-8"
    assert doc.metadata["path"] == str(path.resolve())
    assert doc.source == str(path)


OFFICE_AND_MAIL = (".docx", ".pptx", ".xlsx", ".odt", ".csv", ".tsv", ".epub", ".eml", ".mbox")


@pytest.mark.parametrize("content", [b"", b"  \n\n\t "])
@pytest.mark.parametrize("extension", [".txt", ".md", ".html", ".pdf", *OFFICE_AND_MAIL, ".png", ".jpg", ".tiff"])
def test_empty_files_of_every_format(tmp_path: Path, settings: Settings, extension: str, content: bytes) -> None:
    path = tmp_path / f"empty{extension}"
    path.write_bytes(content)
    with pytest.raises(EmptyDocumentError) as info:
        load_source(str(path), settings)
    assert info.value.source == str(path)


# --- registry ----------------------------------------------------------------------


class _RecLoader:
    """A format no built-in loader reads: GNU recutils' plain-text records."""

    name: str = "rec"
    media_types: tuple[str, ...] = ("text/x-recfile",)
    extensions: tuple[str, ...] = (".rec",)

    def load(self, data: bytes, source: str) -> ParsedDocument:
        rows = data.decode().strip().splitlines()
        return ParsedDocument(source, "table", (Block("table", "\n".join(rows)),), "text/x-recfile")


@pytest.fixture
def clean_registry() -> Iterator[None]:
    with LOADERS.isolated():
        yield


@pytest.mark.usefixtures("clean_registry")
def test_register_loader_adds_a_format() -> None:
    assert get_loader(extension=".rec") is None
    register_loader(_RecLoader())
    assert get_loader(extension="REC").name == "rec"  # type: ignore[union-attr]
    assert get_loader(media_type="text/x-recfile; charset=utf-8").name == "rec"  # type: ignore[union-attr]
    assert parse(_raw("t.rec", b"a: 1\nb: 2\n")).blocks[0].kind == "table"


def test_register_loader_rejects_non_loaders() -> None:
    with pytest.raises(TypeError):
        register_loader(object())  # type: ignore[arg-type]


@pytest.mark.usefixtures("clean_registry")
def test_entry_point_plugins_load_and_broken_ones_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    module = __name__
    globals()["_NOT_A_LOADER"] = object()
    install_distribution(tmp_path, monkeypatch, {"sourcebook.loaders": {
        "rec": f"{module}:_RecLoader",
        "broken": "no_such_module_xyz:Loader",
        "odd": f"{module}:_NOT_A_LOADER",
    }})
    with caplog.at_level(logging.WARNING):
        assert get_loader(extension=".rec").name == "rec"  # type: ignore[union-attr]
    assert [loader.name for loader in LOADERS.parts()] == [
        "rec", "markdown", "html", "pdf", "text", "docx", "pptx", "xlsx", "odt", "csv", "epub", "eml", "mbox", "image",
    ]  # fmt: skip
    assert "broken" in caplog.text and "odd" in caplog.text


# --- expand_sources --------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = [
        "README.md",
        "guide.TXT",
        "image.png",
        ".hidden.md",
        ".git/config.md",
        "docs/a.html",
        "docs/b.pdf",
        "docs/.secret/c.md",
        "docs/deep/z.rst",
        "docs/deep/notes.markdown",
        "node_modules/pkg/readme.md",
        "src/node_modules/x.md",
        "build/out.md",
    ]
    for name in files:
        path = tmp_path / "kb" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return tmp_path / "kb"


def test_folder_expansion_with_default_include_and_exclude(tree: Path) -> None:
    got = expand_sources([str(tree)], DEFAULT_INCLUDE, DEFAULT_EXCLUDE)
    relative = [os.path.relpath(path, tree) for path in got]
    assert relative == [
        "README.md",
        "build/out.md",
        "docs/a.html",
        "docs/b.pdf",
        "docs/deep/notes.markdown",
        "docs/deep/z.rst",
        "guide.TXT",
    ]
    assert all(path.startswith(str(tree) + os.sep) for path in got)


def test_sources_keep_the_folder_as_given(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    got = expand_sources(["kb/docs/"], ["*.pdf"], [])
    assert got == [os.path.join("kb/docs/", "b.pdf")]


def test_include_and_exclude_match_relative_paths_and_components(tree: Path) -> None:
    got = expand_sources([str(tree)], ["docs/*", "*.md"], [".*", "deep", "build/*", "*node_modules*"])
    assert [os.path.relpath(path, tree) for path in got] == ["README.md", "docs/a.html", "docs/b.pdf"]


def test_explicit_files_urls_and_missing_paths_pass_through(tree: Path) -> None:
    inputs = [
        str(tree / "image.png"),
        "https://example.com/page",
        str(tree / "missing.md"),
        str(tree / "docs"),
        str(tree / "image.png"),
    ]
    got = expand_sources(inputs, ["*.html"], [])
    assert got == [
        str(tree / "image.png"),
        "https://example.com/page",
        str(tree / "missing.md"),
        str(tree / "docs" / "a.html"),
    ]


def test_expansion_is_deterministic(tree: Path) -> None:
    first = expand_sources([str(tree)], ["*"], [])
    assert (
        first == expand_sources([str(tree)], ["*"], []) == sorted(first, key=lambda p: Path(p).relative_to(tree).parts)
    )


class _CrashingLoader(_RecLoader):
    """A loader with a bug: it raises what no loader should (StopIteration, as the PDF loader
    did on a PDF holding only tables)."""

    def load(self, data: bytes, source: str) -> ParsedDocument:
        return next(iter(()))


@pytest.mark.usefixtures("clean_registry")
def test_a_loader_that_crashes_fails_its_file_alone_with_a_named_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from sourcebook import KnowledgeBase

    register_loader(_CrashingLoader())
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "people.rec").write_text("name: Ada\n")
    (tmp_path / "docs" / "fine.md").write_text("# Fine\n\nThis file is fine.\n")
    with KnowledgeBase.open(tmp_path / "kb.db", include=(*DEFAULT_INCLUDE, "*.rec")) as kb:
        results = {Path(r.source).name: r for r in kb.add(str(tmp_path / "docs"))}
        assert results["fine.md"].action == "added"
        crashed = results["people.rec"]
        assert (crashed.action, crashed.error_code) == ("failed", "loader_error")
        assert crashed.error == f"{tmp_path / 'docs' / 'people.rec'}: the rec loader failed (StopIteration)"
        assert kb.document(crashed.document_id).chunk_count == 0
    assert "Traceback" in caplog.text and "StopIteration" in caplog.text  # the bug stays visible in the log
