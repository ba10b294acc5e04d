"""A large plain-text file streamed (loaders/textfile.py) gives what reading it whole gives: the
fingerprint, title, metadata, blocks and chunks; only what it holds at once differs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sourcebook import Settings
from sourcebook.chunking import parts as parts_module
from sourcebook.chunking.parts import chunk_in_parts
from sourcebook.errors import LoaderError
from sourcebook.loaders import parse, read_source, textfile
from sourcebook.loaders.text import split_paragraphs, stream_paragraphs
from sourcebook.loaders.textfile import open_text_file

LIMIT = 10**9


def _count(texts: list[str]) -> list[int]:
    return [len(text.split()) for text in texts]


def _text(paragraphs: int, seed: int = 3) -> str:
    """Prose paragraphs with reST titles of two styles, odd blank lines and trailing spaces."""
    rng = random.Random(seed)
    words = "model data river policy energy signal history method value growth theory sample".split()
    out = []
    for n in range(paragraphs):
        if n % 40 == 0:
            title = f"Part {n}"
            out.append(f"{title}\n{('=' if n % 80 else '-') * len(title)}")
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) + "." for _ in range(rng.randint(1, 5))]
        out.append("\n".join(lines) + rng.choice(["", " ", "\t"]))
    return rng.choice(["", "\n \n"]) + "\n\n".join(out) + "\n"


@pytest.fixture
def small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stream files of a few kB, read 997 bytes at a time: paragraphs, blank lines and CRLFs
    straddle the reads."""
    monkeypatch.setattr(textfile, "STREAM_BYTES", 1000)
    monkeypatch.setattr(textfile, "PIECE_BYTES", 997)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize(("bom", "encoding"), [(b"", "utf-8"), (b"\xef\xbb\xbf", "utf-8"), (b"", "cp1252")])
def test_streamed_file_parses_and_chunks_as_read_whole(
    tmp_path: Path, small_reads: None, monkeypatch: pytest.MonkeyPatch, newline: str, bom: bytes, encoding: str
) -> None:
    """UTF-8 with or without a BOM, and another encoding (detected in the opening, as
    `decode_text` detects it in the whole): accented words straddle the reads."""
    path = tmp_path / "notes.txt"
    path.write_bytes(bom + _text(400).replace("river", "rivière").replace("\n", newline).encode(encoding))
    whole = parse(read_source(str(path), Settings()))
    streamed_file = open_text_file(str(path), LIMIT)
    assert streamed_file is not None and streamed_file.fingerprint == read_source(str(path), Settings()).fingerprint
    streamed = streamed_file.parse()
    assert (streamed.document.title, streamed.document.metadata) == (whole.title, whole.metadata)
    assert streamed.characters == sum(len(block.text) for block in whole.blocks)
    assert list(streamed_file.blocks()) == list(whole.blocks)
    assert whole.text.startswith(streamed.document.text)  # its opening, for an enricher
    for part_chars in (1 << 19, 3000):  # one part (the file is under the part size), and many
        monkeypatch.setattr(parts_module, "PART_CHARS", part_chars)
        expected = list(chunk_in_parts(whole, _count, 40, 0.15))
        assert list(chunk_in_parts(streamed.document, _count, 40, 0.15, streamed_file.blocks())) == expected
        assert (len(expected) == 1) == (part_chars > len(whole.text))


def test_stream_paragraphs_in_any_pieces_are_split_paragraphs_of_the_whole() -> None:
    rng = random.Random(5)
    alphabet = ["a", "b c", " ", "\t", "\n", "\n\n", "\n \n", "\n\t \n\n"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert list(stream_paragraphs(pieces)) == list(split_paragraphs(text)), pieces


def test_a_paragraph_longer_than_a_part_comes_in_pieces_cut_at_whitespace() -> None:
    text = " ".join(f"word{n}" for n in range(3000))  # no blank line in 26,000 characters
    pieces = list(stream_paragraphs([text[i : i + 700] for i in range(0, len(text), 700)], longest=5000))
    assert len(pieces) > 5 and max(map(len, pieces)) <= 5000 and "".join(pieces) == text
    assert all(piece.endswith(" ") for piece in pieces[:-1])


def test_utf8_damaged_after_its_opening_stays_utf8(tmp_path: Path, small_reads: None) -> None:
    """The encoding is detected in the opening (997 bytes here), which is clean UTF-8 but cut
    inside a character: the file streams as UTF-8, as read whole, its bad byte replaced, not as
    windows-1252 mojibake."""
    path = tmp_path / "notes.txt"
    body = _text(400).replace("river", "rivière").encode()
    path.write_bytes(b"x " * 498 + "è\n\n".encode() + body[:5000] + b"\xff" + body[5000:])
    whole = parse(read_source(str(path), Settings()))
    streamed_file = open_text_file(str(path), LIMIT)
    assert streamed_file is not None and streamed_file.encoding == whole.metadata["encoding"] == "utf-8"
    assert list(streamed_file.blocks()) == list(whole.blocks)


def test_a_file_changed_after_it_was_hashed_fails_instead_of_storing_other_text(tmp_path: Path, small_reads: None) -> None:
    path = tmp_path / "log.txt"
    path.write_text(_text(100))
    streamed_file = open_text_file(str(path), LIMIT)
    assert streamed_file is not None
    streamed_file.parse()
    path.write_text(_text(100, seed=4))
    with pytest.raises(LoaderError, match="changed while it was read"):
        list(streamed_file.blocks())


def test_what_is_read_whole_as_before(tmp_path: Path, small_reads: None) -> None:
    """Binary, a man page, a small file, too large, UTF-16, or a format another loader reads."""
    cases = {
        "binary.txt": b"\x00\x01\x02" * 1000,
        "ls.txt": b"LS(1)    User Commands    LS(1)\n\nNAME\n       ls - list\n\n" + _text(50).encode(),
        "small.txt": b"A few words.\n",
        "notes.md": _text(50).encode(),
        "utf16.txt": _text(50).encode("utf-16"),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        assert open_text_file(str(tmp_path / name), LIMIT) is None, name
    (tmp_path / "big.txt").write_text(_text(50))
    assert open_text_file(str(tmp_path / "big.txt"), 2000) is None
    assert open_text_file(str(tmp_path / "missing.txt"), LIMIT) is None


def test_a_streamed_file_is_stored_as_read_whole_and_skipped_when_unchanged(
    tmp_path: Path, small_reads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sourcebook import KnowledgeBase

    path = tmp_path / "notes.txt"
    path.write_text(_text(30))
    stored = {}
    for streaming in (True, False):
        if not streaming:
            monkeypatch.setattr(textfile, "STREAM_BYTES", LIMIT)
        with KnowledgeBase.open(tmp_path / f"kb-{streaming}.db") as kb:
            [added] = kb.add(str(path))
            assert added.action == "added" and added.chunks > 1
            stored[streaming] = [(c.position, c.text, c.heading_path, c.prefix, c.title) for c in kb.chunks(str(path))]
            assert kb.document(str(path)).metadata["encoding"] == "utf-8"
            if streaming:
                monkeypatch.setattr(textfile, "STREAM_BYTES", LIMIT)  # read whole now: the same fingerprint
                assert [r.action for r in kb.add(str(path))] == ["unchanged"]
    assert stored[True] == stored[False]
