"""Knowledge-base-level evidence: how rare, in the whole knowledge base, is a name the question asks about
and the answer's citations lack."""

from __future__ import annotations

import math

import pytest

from sourcebook.answering.evidence import (
    UNHELD_MIN_CHUNKS, UNKNOWN_NAME_RARITY, UNKNOWN_WORDS_MIN_CHUNKS, missing_name_rarity, question_names, unheld_words, unknown_name,
    unknown_setting, unknown_words,
)
from sourcebook.models import Answer, Citation, Hit, StoredChunk, TermStatistics


def test_names_are_found_by_shape_not_by_a_list() -> None:
    assert question_names("How do I track large binary files with Git LFS?") == ["Git", "LFS"]
    assert question_names("How do I use microtype in ConTeXt on macOS with utf8?") == ["ConTeXt", "macOS", "utf8"]
    # a capital that opens a sentence is grammar; stopwords are never names, even in capitals
    assert question_names("Windows users ask. Does IT need it? Which option sets the upstream?") == []
    assert question_names("Which option: Overleaf or Word?") == ["Word"]  # "Overleaf" opens a clause after ':'


def test_rarity_reads_alike_whatever_the_size_of_the_knowledge_base() -> None:
    for chunks in (10, 10_000):
        stats = TermStatistics(chunks, {"rare": 0, "everywhere": chunks, "half": chunks // 2})
        assert stats.rarity("rare") == pytest.approx(1.0) and stats.rarity("unknown") == pytest.approx(1.0)
        assert stats.rarity("everywhere") == pytest.approx(0.0)
        assert 0.0 < stats.rarity("half") < 0.5
    assert TermStatistics(0, {"rare": 0}).rarity("rare") == 0.0
    assert TermStatistics(100, {"a": 1}).rarity("a") == pytest.approx(math.log(100.5 / 1.5) / math.log(201))


def _hit(n: int, text: str, heading: str = "OPTIONS") -> Hit:
    chunk = StoredChunk(f"c{n}", f"d{n}", "default", f"/docs/{n}.html", "git-push(1)", 0, text, (heading,), None, "")
    return Hit(n, 0.03, chunk, keyword_rank=n, vector_score=0.5)


def _answer(question: str, hits: tuple[Hit, ...], cited: tuple[int, ...]) -> Answer:
    citations = tuple(
        Citation(i, f"d{n}", f"/docs/{n}.html", f"c{n}", "q", "Git manual", (), None) for i, n in enumerate(cited, 1)
    )
    return Answer(question, "some answer", not citations, citations, 0.0, hits)


QUESTION = "How do I track large binary files with Git LFS?"  # keyword terms: track larg binari file git lf
STATS = TermStatistics(50, {"track": 5, "larg": 3, "binari": 2, "file": 40, "git": 45, "lf": 0})


def test_a_name_no_chunk_holds_is_as_rare_as_can_be() -> None:
    hits = (_hit(1, "Git stores large binary files in packs."), _hit(2, "Track the files you add."))
    assert missing_name_rarity(QUESTION, _answer(QUESTION, hits, (1,)), STATS) == pytest.approx(1.0)


def test_the_subject_of_the_knowledge_base_says_little_by_its_absence_from_the_citation() -> None:
    question = "Which option makes Git push atomically?"
    stats = TermStatistics(50, {"option": 30, "make": 10, "git": 45, "push": 12, "atom": 2})
    entry = (_hit(1, "--atomic: use an atomic transaction on the remote side."),)
    rarity = missing_name_rarity(question, _answer(question, entry, (1,)), stats)
    assert rarity == pytest.approx(stats.rarity("git")) and rarity < 0.1  # 45 of 50 chunks hold "git"
    rare = TermStatistics(50, {**stats.frequencies, "git": 1})
    assert missing_name_rarity(question, _answer(question, entry, (1,)), rare) > 0.7


def test_names_count_as_cited_only_when_written_as_names() -> None:
    stats = TermStatistics(50, {**STATS.frequencies, "lf": 4})
    # a heading "git-lfs" holds "lfs" in lower case only: a word, not the name "LFS" as the question writes it
    headed = (_hit(1, "Git stores large binary files in packs.", heading="git-lfs"),)
    assert missing_name_rarity(QUESTION, _answer(QUESTION, headed, (1,)), stats) == pytest.approx(stats.rarity("lf"))
    named = (_hit(1, "Git LFS stores large binary files.", heading="git-lfs"),)
    assert missing_name_rarity(QUESTION, _answer(QUESTION, named, (1,)), stats) == 0.0
    question = "How do I use microtype in ConTeXt?"
    context = TermStatistics(20, {"us": 10, "microtyp": 20, "context": 3})
    plain = (_hit(1, "In this context, use it."),)
    small_caps = (_hit(1, "CONTEXT has its own."),)  # PDF text of a TeX logo (pdfTEX) is still the name
    assert missing_name_rarity(question, _answer(question, plain, (1,)), context) == pytest.approx(context.rarity("context"))
    assert missing_name_rarity(question, _answer(question, small_caps, (1,)), context) == 0.0
    # an abstention cites nothing: every name is missing from it
    assert missing_name_rarity(question, _answer(question, small_caps, ()), context) == pytest.approx(context.rarity("context"))


def test_a_plain_word_capitalised_by_position_does_not_write_a_name_with_an_inner_capital() -> None:
    question = "How do I use microtype in ConTeXt?"
    context = TermStatistics(205, {"us": 90, "microtyp": 205, "context": 15})
    for text in ("6 Context-sensitive setup", "CONTEXT-SENSITIVE SETUP 21", "Context matters."):
        hits = (_hit(1, text),)
        rarity = missing_name_rarity(question, _answer(question, hits, (1,)), context)
        assert rarity == pytest.approx(context.rarity("context"))
    for text in ("ConTeXt has its own.", "ConTEXt, as PDF text writes the logo.", "CONTEXT has its own."):
        assert missing_name_rarity(question, _answer(question, (_hit(1, text),), (1,)), context) == 0.0
    # a name capitalised only at its start is written by any capitalised occurrence, in a compound too
    git = TermStatistics(50, {"git": 1, "option": 20})
    compound = (_hit(1, "Git-specific options."),)
    assert missing_name_rarity("Which option does Git use?", _answer("q", compound, (1,)), git) == 0.0


def test_a_question_that_names_nothing_has_nothing_missing() -> None:
    question = "How do I change the page margins?"
    assert missing_name_rarity(question, _answer(question, (), ()), TermStatistics(5, {"page": 0})) == 0.0


def test_a_question_set_in_something_no_chunk_holds_is_outside_the_knowledge_base() -> None:
    question = "How do I serve repositories over the git:// protocol with git daemon?"
    stats = TermStatistics(1324, {"serv": 2, "repositori": 154, "git": 1317, "protocol": 18, "daemon": 0})
    assert unknown_setting(question, stats, ()) == ("daemon",)
    assert unknown_setting(question, TermStatistics(1324, {**stats.frequencies, "daemon": 3}), ()) == ()
    macos = TermStatistics(1324, {"gener": 40, "ssh": 6, "kei": 30, "git": 1317, "maco": 0})
    assert unknown_setting("How do I generate an SSH key for Git on macOS?", macos, ()) == ("maco",)


def test_a_compound_name_the_retrieved_chunks_never_write_is_unknown() -> None:
    question = "How do I send my patch series to a mailing list with git send-email?"
    stats = TermStatistics(1324, {"send": 10, "patch": 87, "seri": 9, "mail": 14, "list": 120, "git": 1317, "email": 10})
    apply = (_hit(1, "git-am - Apply a series of patches from a mailbox; send an email to the list."),)
    assert unknown_setting(question, stats, apply) == ("send-email",)
    documented = (*apply, _hit(2, "git send-email takes the patches given on the command line and emails them."))
    assert unknown_setting(question, stats, documented) == ()
    # only in the closing phrase: a hyphenated word elsewhere is prose ("user-supplied", "one-line")
    prose = "How do I time a one-line statement from the shell?"
    assert unknown_setting(prose, TermStatistics(90, {"time": 9, "on": 3, "line": 9, "statement": 5, "shell": 4}), ()) == ()


def test_only_the_closing_phrase_of_an_otherwise_known_question_counts() -> None:
    # paraphrase: the knowledge base lacks other words of the question too ("losing", "somebody")
    meantime = "How do I push without losing commits somebody else pushed in the meantime?"
    small = TermStatistics(6, {"push": 3, "lose": 0, "commit": 2, "somebodi": 0, "els": 1, "meantim": 0})
    assert unknown_setting(meantime, small, ()) == ()
    # a word outside the closing phrase is a passing one, however absent
    drive = "How do I prevent a linked worktree on a removable drive from being pruned?"
    worktree = TermStatistics(1324, {"prevent": 9, "link": 50, "worktre": 30, "remov": 40, "drive": 0, "prune": 12})
    assert unknown_setting(drive, worktree, ()) == ()
    # the opening "In" does not set the question in anything; nor does a question with no closing phrase
    opening = TermStatistics(205, {"file": 80, "rais": 2, "pdftex": 40, "memori": 3, "paramet": 9, "tex": 0, "live": 2})
    assert unknown_setting("In which file do I raise pdfTeX's memory parameters?", opening, ()) == ()
    assert unknown_setting("Which option is absent?", TermStatistics(10, {"option": 0, "absent": 0}), ()) == ()
    assert unknown_setting("How do I use it with Overleaf?", TermStatistics(0, {"us": 0, "overleaf": 0}), ()) == ()


def test_a_long_closing_phrase_is_the_questions_own_clause_not_a_setting() -> None:
    """dvipdfmx's dx-23 is answered ("seac"); its "for ..." phrase runs on for ten words, with a verb
    no chunk holds ("triggers"). A setting is a thing named in a few words."""
    counts = {"type1": 9, "oper": 25, "composit": 1, "accent": 1, "glyph": 24, "trigger": 0, "obsolet": 2,
              "endchar": 2, "warn": 3, "cff": 6, "convers": 9}
    clause = "Which Type1 operator for composite accented glyphs triggers the obsolete endchar warning during CFF conversion?"
    assert unknown_setting(clause, TermStatistics(132, counts), ()) == ()
    short = "Which Type1 operator triggers the warning for composite glyphs?"
    assert unknown_setting(short, TermStatistics(132, counts), ()) == ()  # "triggers" outside the phrase
    tectonic = TermStatistics(205, {"make": 9, "microtyp": 180, "work": 30, "tecton": 0, "engin": 4})
    assert unknown_setting("How do I make microtype work with the Tectonic engine?", tectonic, ()) == ("tecton",)


def test_a_name_no_retrieved_chunk_writes_and_few_chunks_hold_is_unknown() -> None:
    question = "How do I profile the memory use of a Python script with Massif?"
    stats = TermStatistics(595, {"profil": 40, "memori": 200, "us": 300, "python": 0, "script": 3, "massif": 60})
    massif = (_hit(1, "Massif is a heap profiler. It measures the memory your program uses."),)
    assert unknown_name(question, stats, massif) == ("Python",)
    assert unknown_name(question, stats, (*massif, _hit(2, "Profiling a Python interpreter with Massif."))) == ()
    # a word the manual writes only in passing, and not as the name: "window" for "on Windows"
    windows = TermStatistics(595, {"run": 90, "valgrind": 400, "window": 2})
    assert unknown_name("How do I run Valgrind on Windows?", windows, (_hit(3, "Run Valgrind like this."),)) == ("Windows",)
    # the subject of the knowledge base need not be in the retrieved chunks
    common = TermStatistics(1324, {"python": 600, "script": 3})
    assert unknown_name("How do I profile a Python script?", common, massif) == ()
    # a plain word is not a name, however absent; nor is the capital that opens the question
    assert unknown_name("Where are dangling commits kept?", TermStatistics(9, {"dangl": 0, "commit": 5, "kept": 0}), ()) == ()
    assert unknown_name("How do I use it with Overleaf?", TermStatistics(0, {"us": 0, "overleaf": 0}), ()) == ()


def test_two_words_no_chunk_of_a_manual_holds_are_unknown() -> None:
    monitor = {"enabl": 30, "built": 20, "file": 600, "system": 90, "monitor": 0, "daemon": 0, "speed": 5, "git": 1317, "statu": 80}
    assert unknown_words(TermStatistics(1324, monitor)) == ("monitor", "daemon")
    # one absent word is often paraphrase ("a removable drive")
    drive = {"prevent": 9, "link": 50, "worktre": 30, "remov": 40, "drive": 0, "prune": 12}
    assert unknown_words(TermStatistics(1324, drive)) == ()
    # a small knowledge base lacks ordinary words by chance
    meantime = {"push": 3, "lose": 0, "commit": 2, "somebodi": 0, "els": 1, "meantim": 0}
    assert unknown_words(TermStatistics(6, meantime)) == ()
    assert unknown_words(TermStatistics(UNKNOWN_WORDS_MIN_CHUNKS, meantime)) == ("lose", "somebodi", "meantim")


def test_a_name_spelled_with_an_inner_capital_is_looked_up_in_the_knowledge_base() -> None:
    """The keyword index counts the plain word "context", not the name ConTeXt: a knowledge base that
    writes "Context-sensitive setup" and "the current context" often still never names ConTeXt."""
    question = "How do I use microtype in ConTeXt?"
    stats = TermStatistics(205, {"us": 90, "microtyp": 205, "context": 15})
    assert stats.rarity("context") < UNKNOWN_NAME_RARITY
    hits = (_hit(1, "6 Context-sensitive setup. Change the context of the current group."),)
    assert unknown_name(question, stats, hits) == ()  # no lookup: the rarity bound alone
    assert unknown_name(question, stats, hits, lambda name: hits) == ("ConTeXt",)
    assert unknown_name(question, stats, hits, lambda name: (*hits, _hit(2, "ConTeXt has its own."))) == ()
    # the subject, written as the manual's PDF text writes it, is found by the lookup
    latex = TermStatistics(205, {"option": 60, "disabl": 10, "protrus": 40, "latex": 15})
    logo = (_hit(3, "LATEX users."),)
    assert unknown_name("Which option disables protrusion in LaTeX?", latex, hits, lambda name: logo) == ()
    # a name capitalised only at its start ("Windows") is not looked up: its plain word is the same word
    windows = TermStatistics(205, {"run": 30, "valgrind": 150, "window": 15})
    assert unknown_name("How do I run Valgrind on Windows?", windows, hits, lambda name: hits) == ()


def test_a_pdf_hyphen_writes_the_hyphen_a_question_types() -> None:
    """PDF text writes U+2010 HYPHEN ("16‐bit Color Depth", dvipdfmx's Table 3.1) where the question
    types "-": the retrieved chunk does write the compound, so the question is not set outside it."""
    question = "Which PDF version is required for 16-bit color depth PNG images?"
    stats = TermStatistics(132, {"pdf": 79, "version": 24, "requir": 21, "16": 11, "bit": 24, "color": 19, "depth": 6,
                                 "png": 7, "imag": 24})
    table = (_hit(1, "Feature PDF Version Required 16\u2010bit Color Depth Version 1.5"),)
    assert unknown_setting(question, stats, table) == ()
    assert unknown_setting(question, stats, (_hit(2, "8\u2011bit images are read as they are."),)) == ("16-bit",)


def test_words_no_chunk_holds_are_unheld_but_adverbs_are_not_counted() -> None:
    """A word of the question no chunk of the knowledge base holds is evidence it is not answered
    ("hyperref" over the dvipdfmx manual); an adverb in -ly is not, as Porter keeps "positionally"
    apart from the "positional" a document writes."""
    question = "How do I get working hyperref links when compiling with dvipdfmx?"
    stats = TermStatistics(132, {"get": 28, "work": 3, "hyperref": 0, "link": 0, "compil": 0, "dvipdfmx": 132})
    assert unheld_words(question, stats) == ("hyperref", "links", "compiling")
    assert unheld_words(question, TermStatistics(132, {**stats.frequencies, "hyperref": 2, "link": 1, "compil": 4})) == ()
    adverb = "force callers to name certain parameters instead of passing them positionally"
    counts = {"forc": 9, "caller": 20, "name": 500, "certain": 40, "paramet": 300, "instead": 50, "pass": 200, "position": 0}
    assert unheld_words(adverb, TermStatistics(2569, counts)) == ()
    # a knowledge base of a few pages lacks ordinary words by chance
    meantime = {"push": 3, "lose": 0, "commit": 2, "somebodi": 0, "els": 1, "meantim": 0}
    paraphrase = "How do I push without losing commits somebody else pushed in the meantime?"
    assert unheld_words(paraphrase, TermStatistics(6, meantime)) == ()
    assert unheld_words(paraphrase, TermStatistics(UNHELD_MIN_CHUNKS, meantime)) == ("losing", "somebody", "meantime")
