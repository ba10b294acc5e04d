"""Structure-aware chunking: sections first, then ever finer splits only where needed.

A document that fits the embedding model's budget is one chunk, unless it spans pages
(or slides): a chunk cites one page. Otherwise it is cut
into sections at heading blocks (a heading with no body joins the next section) and
each section is packed on its own, so no chunk mixes two sections. Whole blocks are
packed while they fit; a block that is too big alone is split at paragraph breaks,
then at sentences or lines (prose prefers sentences, code, lists and tables prefer
lines), then at words, and a single giant "word" (base64, a minified line) at
characters. Consecutive chunks of a section share a few trailing sentences (or words).

Budget: every chunk's `embedding_text` (prefix + "\\n" + text) must count at most
`max_tokens`, exactly, because the model silently truncates what is longer. Pieces are
counted in batches and summed (for WordPiece and other whitespace-pretokenised models
the tokens of a whitespace-joined text are the sum of its parts' tokens); every final
chunk is then counted once more, and a section with a chunk over budget is packed
again with a budget smaller by the excess, so a counter that is not additive still
yields chunks within budget. A prefix (`make_prefix`) over half the budget, from a
very long title, is cut to half so that text always has room.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from ..errors import SourcebookError
from ..models import Block, Chunk, ParsedDocument
from .sentences import Span, split_sentences

TokenCounter = Callable[[Sequence[str]], list[int]]
"""Content tokens (special tokens excluded) of each text of a batch."""

Splitter = Callable[[str, int, int], list[Span]]

MIN_MAX_TOKENS = 16
"""Below this there is no room for a prefix and text; the model sizes are far larger."""

_LIKELY_FITS_CHARS_PER_TOKEN = 4.5
"""A document with at most this many characters per budget token is first counted
whole, as it likely is one chunk (that count then doubles as its verification); a
longer one is counted by its atoms. On SciFact (4.6 characters a token on average)
about 70% of documents at 4-4.5 characters a token fit, 30% at 4.5-5: counting whole
pays off while more than about half fit."""

_BATCH_SIZE = 512
"""Texts per call of the counter when counting for many documents at once."""

_HEADINGS = ("heading", "term")  # a reference entry's term opens a section as a heading does
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")
_NEWLINE = re.compile(r"\n\s*")
_WORD = re.compile(r"\S+")
_NON_SPACE = re.compile(r"\S")


class ChunkingError(SourcebookError):
    """The token counter gave counts no chunk could be fitted to."""

    code = "chunking_error"


def make_prefix(title: str, heading_path: tuple[str, ...]) -> str:
    """The contextual prefix "Title > Section > Subsection" embedded before a chunk.

    A heading equal to the title (a Markdown file's top heading) is not repeated, empty
    parts are dropped, and whitespace is collapsed so the prefix stays on one line.
    """
    title = " ".join(title.split())
    headings = (" ".join(heading.split()) for heading in heading_path)
    parts = [title, *(h for h in headings if h != title)]
    return " > ".join(part for part in parts if part)


def chunk_document(
    doc: ParsedDocument,
    count_tokens: TokenCounter,
    max_tokens: int = 256,
    overlap: float = 0.15,
) -> list[Chunk]:
    """Cut `doc` into chunks whose `embedding_text` counts at most `max_tokens` tokens.

    `count_tokens` counts the embedding model's content tokens (no special tokens) of
    a batch of texts. `overlap` is the share of `max_tokens` that consecutive chunks
    of one section share, as whole trailing sentences (or words) of the earlier chunk.
    A chunk's text is `doc.text[start:end]`; its heading path is the one shared by the
    blocks it touches (its first block's, unless it runs from a parent heading into a
    subsection), its page that of its first block.
    """
    return chunk_documents([doc], count_tokens, max_tokens, overlap)[0]


def chunk_documents(
    docs: Sequence[ParsedDocument],
    count_tokens: TokenCounter,
    max_tokens: int = 256,
    overlap: float = 0.15,
) -> list[list[Chunk]]:
    """`chunk_document` for each of `docs`, with token counting batched across them.

    Tokenizing is most of the cost of chunking, and a tokenizer is much faster on a
    few large batches than on many small ones (it also uses several cores), so the
    two passes over the text (counting atoms, verifying chunks) each make one batched
    call for all `docs`. Only rare work (splitting a giant sentence into words, the
    words of an overlap, re-packing a section) counts per document. Every document's
    counts are held until all are done, so ingest in batches of a few hundred.
    """
    if max_tokens < MIN_MAX_TOKENS:
        raise ValueError(f"max_tokens must be at least {MIN_MAX_TOKENS}, got {max_tokens}")
    if not 0 <= overlap < 0.5:
        raise ValueError(f"overlap must be in [0, 0.5), got {overlap}")
    chunkers = [_DocumentChunker(doc, count_tokens, max_tokens, overlap) for doc in docs]
    _count_together(chunkers, [chunker.first_keys() for chunker in chunkers], count_tokens)
    drafts = [chunker.draft() for chunker in chunkers]
    texts = [[chunk.embedding_text for chunk in draft] for draft in drafts]
    _count_together(chunkers, texts, count_tokens)
    return [chunker.finish(draft) for chunker, draft in zip(chunkers, drafts)]


def _count_together(
    chunkers: Sequence[_DocumentChunker],
    keys: Sequence[Sequence[Span | str]],
    count_tokens: TokenCounter,
) -> None:
    """Count every chunker's uncounted `keys` in a few large batches."""
    missing = [chunker.tokens.missing(k) for chunker, k in zip(chunkers, keys)]
    texts = [c.tokens.text_of(key) for c, m in zip(chunkers, missing) for key in m]
    counts = []
    for first in range(0, len(texts), _BATCH_SIZE):
        counts.extend(count_tokens(texts[first : first + _BATCH_SIZE]))
    offset = 0
    for chunker, m in zip(chunkers, missing):
        chunker.tokens.add(m, counts[offset : offset + len(m)])
        offset += len(m)


@dataclass(frozen=True, slots=True)
class _Piece:
    """A trimmed span of the document text, its token count, and how to split it further."""

    start: int
    end: int
    tokens: int
    levels: tuple[Splitter, ...] = ()


def _trim(text: str, start: int, end: int) -> Span | None:
    """The span without its outer whitespace, or None if it is blank."""
    first = _NON_SPACE.search(text, start, end)
    if first is None:
        return None
    stop = end
    while text[stop - 1].isspace():
        stop -= 1
    return first.start(), stop


def _split_at(separator: re.Pattern[str], text: str, start: int, end: int) -> list[Span]:
    """Trimmed non-blank spans of text[start:end] between matches of `separator`."""
    spans = []
    for match in separator.finditer(text, start, end):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, end))
    return [trimmed for s, e in spans if (trimmed := _trim(text, s, e))]


def _paragraphs(text: str, start: int, end: int) -> list[Span]:
    return _split_at(_BLANK_LINE, text, start, end)


def _lines(text: str, start: int, end: int) -> list[Span]:
    return _split_at(_NEWLINE, text, start, end)


def _sentences(text: str, start: int, end: int) -> list[Span]:
    return [(start + s, start + e) for s, e in split_sentences(text[start:end])]


def _words(text: str, start: int, end: int) -> list[Span]:
    return [m.span() for m in _WORD.finditer(text, start, end)]


def _halves(text: str, start: int, end: int) -> list[Span]:
    """The last resort, for a giant word: two halves (halved again while too big)."""
    middle = (start + end) // 2
    return [span for s, e in ((start, middle), (middle, end)) if (span := _trim(text, s, e))]


# Prose is best cut between sentences; code, lists and tables between lines.
_PROSE_LEVELS: tuple[Splitter, ...] = (_paragraphs, _sentences, _lines, _words, _halves)
_LINE_LEVELS: tuple[Splitter, ...] = (_paragraphs, _lines, _sentences, _words, _halves)


def _levels_for(block: Block) -> tuple[Splitter, ...]:
    return _PROSE_LEVELS if block.kind in ("paragraph", *_HEADINGS) else _LINE_LEVELS


def _common_path(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """The longest heading path that all `paths` start with."""
    first = paths[0]
    length = len(first)
    for path in paths[1:]:
        length = min(length, len(path))
        while path[:length] != first[:length]:
            length -= 1
    return first[:length]


class _Tokens:
    """Memoised token counts of one document's spans (tuples) and of strings.

    Tokenizing dominates chunking time, so the text is tokenized about once: its
    atoms (sentences, or lines of code) are counted in one batch, and any span that
    starts and ends on atom boundaries (a block, a paragraph, a run of sentences) is
    counted as the sum of its atoms. Only finer spans (the words of a giant sentence)
    and the final verification cost another pass over a little text.
    """

    def __init__(self, text: str, count_tokens: TokenCounter) -> None:
        self._text = text
        self._count = count_tokens
        self._cache: dict[Span | str, int] = {}
        self._atoms: Sequence[Span] = ()
        self._atom_at_start: dict[int, int] = {}
        self._atom_at_end: dict[int, int] = {}
        self._sums = [0]  # self._sums[i]: tokens of the atoms before atom i

    def index_atoms(self, atoms: Sequence[Span]) -> None:
        """Count `atoms` (in order, not overlapping) so spans of whole atoms are sums."""
        self._atoms = atoms
        for index, ((start, end), tokens) in enumerate(zip(atoms, self.of(atoms))):
            self._atom_at_start[start] = index
            self._atom_at_end[end] = index
            self._sums.append(self._sums[-1] + tokens)

    def of(self, keys: Sequence[Span | str]) -> list[int]:
        """Counts of `keys`, asking the counter once for all those not yet known."""
        if missing := self.missing(keys):
            self.add(missing, self._count([self.text_of(key) for key in missing]))
        return [self._cache[key] for key in keys]

    def missing(self, keys: Sequence[Span | str]) -> list[Span | str]:
        """The distinct `keys` that need counting (sums of atoms are filled in here)."""
        missing = []
        for key in dict.fromkeys(k for k in keys if k not in self._cache):
            tokens = self._sum_of_atoms(key)
            if tokens is None:
                missing.append(key)
            else:
                self._cache[key] = tokens
        return missing

    def add(self, keys: Sequence[Span | str], counts: Sequence[int]) -> None:
        self._cache.update(zip(keys, counts, strict=True))

    def text_of(self, key: Span | str) -> str:
        return key if isinstance(key, str) else self._text[key[0] : key[1]]

    def atoms_in(self, start: int, end: int) -> Sequence[Span] | None:
        """The atoms that make up text[start:end] exactly, if it is made of atoms."""
        if (atoms := self._atom_range(start, end)) is None:
            return None
        return self._atoms[atoms.start : atoms.stop]

    def _sum_of_atoms(self, key: Span | str) -> int | None:
        if isinstance(key, str) or (atoms := self._atom_range(*key)) is None:
            return None
        return self._sums[atoms.stop] - self._sums[atoms.start]

    def _atom_range(self, start: int, end: int) -> range | None:
        first = self._atom_at_start.get(start)
        last = self._atom_at_end.get(end)
        if first is None or last is None or last < first:
            return None
        return range(first, last + 1)


class _DocumentChunker:
    """Chunks one document in three steps, so that a caller can batch the counting
    of many documents between them: `first_keys` names what to count, `draft` plans
    chunks from those counts, `finish` checks the draft's counts and re-packs if any
    chunk is over budget."""

    def __init__(
        self, doc: ParsedDocument, count_tokens: TokenCounter, max_tokens: int, overlap: float
    ) -> None:
        self.doc = doc
        self.text = doc.text
        self.blocks = doc.blocks
        self.max_tokens = max_tokens
        self.overlap_tokens = round(overlap * max_tokens)
        self.tokens = _Tokens(self.text, count_tokens)
        self.block_starts = self._block_starts()
        self.whole = _trim(self.text, 0, len(self.text))
        self.prefixes: dict[tuple[str, ...], str] = {}
        self.splits: dict[tuple[Splitter, int, int], list[Span]] = {}
        self.sections: list[list[_Piece]] = []
        self.cuts: list[int] = []  # tokens taken off each section's budget
        self.plan_sizes: list[int] = []  # chunks per section in the last packing

    def _block_starts(self) -> list[int]:
        starts, offset = [], 0
        for block in self.blocks:
            starts.append(offset)
            offset += len(block.text) + 2
        return starts

    # -- the three steps -------------------------------------------------------------

    def first_keys(self) -> list[Span | str]:
        """What the first pass counts: a short document whole (it likely is the one
        chunk), else the atoms of its blocks and the prefixes its chunks may get."""
        if self.whole is None:
            return []
        if short := self._short_candidate(*self.whole):
            return [short.prefix, short.embedding_text]
        return [*self._atoms, *self._raw_prefixes()]

    def draft(self) -> list[Chunk]:
        """Chunks to verify: the whole document if it fits, else its sections packed."""
        if self.whole is None:
            return []
        if (short := self._short_candidate(*self.whole)) and self._short_fits(short):
            return [short]
        pieces = self._pieces
        total = sum(p.tokens for p in pieces) + self._prefix_tokens([p.start for p in pieces])
        if total <= self.max_tokens and self._one_page:
            return [self._chunk(0, *self.whole)]
        return self._packed()

    def finish(self, draft: list[Chunk]) -> list[Chunk]:
        """`draft` with its token counts once every chunk is within budget; until then,
        sections are packed again with budgets lowered by their largest excess."""
        while True:
            counts = self.tokens.of([chunk.embedding_text for chunk in draft])
            excess = [n - self.max_tokens for n in counts]
            if max(excess, default=0) <= 0:
                return [replace(chunk, token_count=n) for chunk, n in zip(draft, counts)]
            if self.sections:
                self._lower_budgets(excess)
            draft = self._packed()

    # -- drafts ----------------------------------------------------------------------

    def _short_candidate(self, start: int, end: int) -> Chunk | None:
        """The whole document as one chunk, if short enough that it likely fits and on one
        page (a chunk cites one page or slide: a short deck is still a chunk per slide)."""
        prefix = self._raw_prefix(self._heading_path(start, end))
        if len(prefix) + end - start > self.max_tokens * _LIKELY_FITS_CHARS_PER_TOKEN or not self._one_page:
            return None
        return self._chunk(0, start, end, prefix)

    def _short_fits(self, chunk: Chunk) -> bool:
        prefix_tokens, tokens = self.tokens.of([chunk.prefix, chunk.embedding_text])
        return prefix_tokens <= self.max_tokens // 2 and tokens <= self.max_tokens

    def _packed(self) -> list[Chunk]:
        """Every section packed within its budget, as chunks to verify."""
        if not self.sections:
            self.sections = self._sections(self._pieces)
            self.cuts = [0] * len(self.sections)
        plans = [self._pack(section, cut) for section, cut in zip(self.sections, self.cuts)]
        self.plan_sizes = [len(plan) for plan in plans]
        spans = [span for plan in plans for span in plan]
        return [self._chunk(position, *span) for position, span in enumerate(spans)]

    def _lower_budgets(self, excess: list[int]) -> None:
        """Take each section's worst excess off its budget; give up past half the budget
        (prefixes take at most the other half), as the counter is then far from additive
        or does not count what `chunk_document` expects."""
        first = 0
        for section, size in enumerate(self.plan_sizes):
            worst = max(excess[first : first + size])
            first += size
            if worst <= 0:
                continue
            self.cuts[section] += worst
            if self.cuts[section] > self.max_tokens // 2:
                raise ChunkingError(
                    f"{self.doc.source}: the token counter's counts cannot be fitted to "
                    f"max_tokens={self.max_tokens}; check that it counts content tokens"
                )

    def _chunk(self, position: int, start: int, end: int, prefix: str | None = None) -> Chunk:
        """The chunk for text[start:end] (token_count still 0), by default with its
        heading path's fitted prefix."""
        path = self._heading_path(start, end)
        return Chunk(
            position=position,
            text=self.text[start:end],
            start=start,
            end=end,
            heading_path=path,
            page=self.blocks[self._block_index(start)].page,
            token_count=0,
            prefix=self._prefix(path) if prefix is None else prefix,
        )

    # -- structure: blocks, atoms, sections, heading paths, prefixes -----------------

    @cached_property
    def _one_page(self) -> bool:
        """May be one chunk: on one page, and no reference entries (each entry is its own unit)."""
        return len({block.page for block in self.blocks}) <= 1 and all(b.kind != "term" for b in self.blocks)

    @cached_property
    def _trimmed_blocks(self) -> list[tuple[Span, tuple[Splitter, ...]]]:
        """Each non-blank block's trimmed span and the levels it is split by."""
        trimmed = []
        for block, start in zip(self.blocks, self.block_starts):
            if span := _trim(self.text, start, start + len(block.text)):
                trimmed.append((span, _levels_for(block)))
        return trimmed

    @cached_property
    def _atoms(self) -> list[Span]:
        """The blocks' sentences (lines for code, lists, tables): what is counted."""
        return [
            atom for span, levels in self._trimmed_blocks for atom in self._spans(levels[1], *span)
        ]

    @cached_property
    def _pieces(self) -> list[_Piece]:
        """Each non-blank block as one piece, counted as the sum of its atoms."""
        self.tokens.index_atoms(self._atoms)
        spans = [span for span, _ in self._trimmed_blocks]
        return [
            _Piece(start, end, tokens, levels)
            for ((start, end), levels), tokens in zip(self._trimmed_blocks, self.tokens.of(spans))
        ]

    def _raw_prefixes(self) -> list[str]:
        """The prefix of every heading path a chunk can have (block paths and parents)."""
        paths = {
            block.heading_path[:depth]
            for block in self.blocks
            for depth in range(len(block.heading_path) + 1)
        }
        return [self._raw_prefix(path) for path in paths]

    def _block_index(self, offset: int) -> int:
        return bisect.bisect_right(self.block_starts, offset) - 1

    def _sections(self, pieces: list[_Piece]) -> list[list[_Piece]]:
        """Block pieces grouped into sections: a new one at each heading, heading path
        change or page change (so a PDF chunk's page is exact, and its citation too)
        once the current section has a body; bare headings join the next."""
        sections: list[list[_Piece]] = []
        has_body = False
        previous: Block | None = None
        for piece in pieces:
            block = self.blocks[self._block_index(piece.start)]
            starts_section = block.kind in _HEADINGS or (
                previous is not None and (block.heading_path, block.page) != (previous.heading_path, previous.page)
            )
            if not sections or (has_body and starts_section):
                sections.append([])
                has_body = False
            sections[-1].append(piece)
            has_body = has_body or block.kind not in _HEADINGS
            previous = block
        return sections

    def _heading_path(self, start: int, end: int) -> tuple[str, ...]:
        """The heading path shared by every block the span touches (its first block's,
        unless the span runs from a parent heading into a subsection). Bare headings leading into
        an entry's term (a Texinfo or AsciiDoc list opening a section) keep the term in the path."""
        blocks = self.blocks[self._block_index(start) : self._block_index(end - 1) + 1]
        lead = next((i for i, block in enumerate(blocks) if block.kind != "heading"), 0)
        return _common_path([block.heading_path for block in blocks[lead if blocks[lead].kind == "term" else 0 :]])

    def _raw_prefix(self, path: tuple[str, ...]) -> str:
        return make_prefix(self.doc.title, path)

    def _prefix(self, path: tuple[str, ...]) -> str:
        """`make_prefix` for `path`, cut to half the budget if a title is that long."""
        if path not in self.prefixes:
            self.prefixes[path] = self._fit_prefix(self._raw_prefix(path))
        return self.prefixes[path]

    def _fit_prefix(self, prefix: str) -> str:
        limit = self.max_tokens // 2
        if not prefix or self.tokens.of([prefix])[0] <= limit:
            return prefix
        words = prefix.split(" ")
        low, high = 0, len(words) - 1  # words[:low] fits, words[:high + 1] does not
        while low < high:
            middle = (low + high + 1) // 2
            if self.tokens.of([" ".join(words[:middle])])[0] <= limit:
                low = middle
            else:
                high = middle - 1
        return " ".join(words[:low])

    def _prefix_tokens(self, starts: Sequence[int]) -> int:
        """The most tokens a prefix of a chunk made of blocks at `starts` can take."""
        paths = {self.blocks[self._block_index(s)].heading_path for s in starts}
        prefixes = [self._prefix(path) for path in paths]
        return max(self.tokens.of(prefixes)) if any(prefixes) else 0

    # -- packing a section -----------------------------------------------------------

    def _pack(self, section: list[_Piece], cut: int) -> list[Span]:
        """Chunk spans for one section, with overlap, each within the section's budget."""
        budget = self.max_tokens - self._prefix_tokens([p.start for p in section]) - cut
        pieces = self._fit(section, budget)
        spans: list[Span] = []
        carry: _Piece | None = None
        i = 0
        while i < len(pieces):
            start, used = (carry.start, carry.tokens) if carry else (pieces[i].start, 0)
            j = i
            while j < len(pieces) and used + pieces[j].tokens <= budget:
                used += pieces[j].tokens
                j += 1
            j = max(j, i + 1)  # a piece that could not be split is a chunk of its own
            spans.append((start, pieces[j - 1].end))
            carry = self._carry(start, pieces[i:j], budget, pieces[j : j + 1])
            i = j
        return spans

    def _carry(
        self, start: int, pieces: list[_Piece], budget: int, following: list[_Piece]
    ) -> _Piece | None:
        """The overlap the next chunk takes from the end of this one (start..last piece)."""
        if not following or not self.overlap_tokens:
            return None
        limit = min(self.overlap_tokens, budget - following[0].tokens)
        return self._overlap(start, pieces, limit) if limit > 0 else None

    def _fit(self, pieces: list[_Piece], budget: int) -> list[_Piece]:
        """`pieces` with every one over `budget` split by its levels, one batch per round."""
        while any(p.tokens > budget and p.levels for p in pieces):
            replaced: list[list[_Piece]] = []
            for piece in pieces:
                replaced.append(self._split(piece) if piece.tokens > budget else [piece])
            flat = [p for group in replaced for p in group]
            counts = self.tokens.of([(p.start, p.end) for p in flat])
            pieces = [
                p if p.tokens >= 0 else _Piece(p.start, p.end, n, p.levels)
                for p, n in zip(flat, counts)
            ]
        return pieces

    def _split(self, piece: _Piece) -> list[_Piece]:
        """`piece` split at its next level (parts uncounted: tokens -1), or passed down.

        Halving is the last level and stays while a part is too big; a single character
        that is still too big ends with no levels (and fails verification if it matters).
        """
        if not piece.levels:
            return [piece]
        splitter, rest = piece.levels[0], piece.levels[1:]
        spans = self._spans(splitter, piece.start, piece.end)
        if len(spans) > 1:
            return [_Piece(s, e, -1, rest or piece.levels) for s, e in spans]
        return [_Piece(piece.start, piece.end, piece.tokens, rest)]

    def _spans(self, splitter: Splitter, start: int, end: int) -> list[Span]:
        """text[start:end] split by `splitter`, memoised: a block split into atoms is
        often split the same way again when it is too big for one chunk."""
        key = (splitter, start, end)
        if key not in self.splits:
            self.splits[key] = splitter(self.text, start, end)
        return self.splits[key]

    # -- overlap ---------------------------------------------------------------------

    def _overlap(self, start: int, pieces: list[_Piece], limit: int) -> _Piece | None:
        """Trailing sentences (or, if the last is too long, words) of the chunk that
        starts at `start` and ends with `pieces`, at most `limit` tokens, never the
        whole chunk (so the next chunk starts later)."""
        end = pieces[-1].end
        region, total = start, 0
        for piece in reversed(pieces):
            total += piece.tokens
            if total >= limit:
                region = piece.start
                break
        sentences = self.tokens.atoms_in(region, end) or _sentences(self.text, region, end)
        taken = self._tail(sentences, limit, start)
        if taken is None:  # a word has a token or more, so at most `limit` words fit
            words = _words(self.text, *sentences[-1])[-limit - 1 :]
            taken = self._tail(words, limit, start)
        return taken

    def _tail(self, spans: Sequence[Span], limit: int, floor: int) -> _Piece | None:
        """The longest run of trailing `spans` within `limit` tokens starting after `floor`."""
        counts = self.tokens.of(spans)
        used, first = 0, None
        for (s, _), n in zip(reversed(spans), reversed(counts)):
            if s <= floor or used + n > limit:
                break
            used += n
            first = s
        return None if first is None else _Piece(first, spans[-1][1], used)
