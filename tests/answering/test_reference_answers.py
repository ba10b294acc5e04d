"""Answers, follow-ups and reranking on a small reference manual: the asked entry, its value, its term."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sourcebook import KnowledgeBase
from sourcebook.answering.focus import Focus, missing_value, stated
from sourcebook.answering.followups import is_generic, offline_follow_ups
from sourcebook.models import Hit, StoredChunk
from sourcebook.retrieval import SearchOptions
from sourcebook.reranking import FEATURES, LinearReranker, identifiers, named_entry, signature_names

# A DocBook-style configuration chapter: neighbouring parameters whose definitions look alike
# ("max_clients" must not be answered with reserved_clients' "three connections").
SERVER_CONFIG = """<html><head><title>Server configuration</title></head><body>
<div class="navheader"><table><tr><td><a href="a.html">Prev</a></td><td><a href="c.html">Next</a></td></tr></table></div>
<h1>Server configuration</h1>
<h2>Connections and authentication</h2>
<p>These parameters control how many clients can connect and how they are admitted. Raising the
number of clients that may connect needs more shared memory; see the memory chapter. Administrators
often tune max_clients and reserved_clients together after watching the connection count.</p>
<div class="variablelist"><dl class="variablelist">
<dt><span class="term"><code>max_clients</code> (<code>integer</code>)</span></dt>
<dd><p>Determines the maximum number of concurrent connections to the server.
The default is typically 100 connections, but might be less if the kernel settings will not support it.
This parameter can only be set at server start.</p></dd>
<dt><span class="term"><code>reserved_clients</code> (<code>integer</code>)</span></dt>
<dd><p>Determines the number of connection slots that are reserved for administrators.
The default is three connections. The value must be less than max_clients.</p></dd>
<dt><span class="term"><code>listen_port</code> (<code>integer</code>)</span></dt>
<dd><p>The TCP port the server listens on. The default is 6700. Only set at server start.</p></dd>
</dl></div>
<h2>Note</h2>
<p>Changes to these parameters take effect at the next restart of the server process.</p>
<div class="navfooter"><a href="index.html">Home</a></div>
</body></html>"""

PUSH_MANUAL = """<html><head><title>git-push(1)</title></head><body>
<h1>git-push(1) Manual Page</h1>
<h2>OPTIONS</h2>
<div class="dlist"><dl>
<dt>-n</dt><dt>--dry-run</dt><dd><p>Do everything except actually send the updates.</p></dd>
<dt>--[no-]force-with-lease</dt>
<dd><p>Usually, "git push" refuses to update a remote ref that is not an ancestor of the local ref
used to overwrite it. This option overrides this restriction if the current value of the remote ref
is the expected value; the push fails otherwise, so nobody else's commits are lost.</p></dd>
<dt>--atomic</dt><dd><p>Use an atomic transaction on the remote side if available. Either all refs
are updated, or on error, no refs are updated.</p></dd>
</dl></div>
</body></html>"""


@pytest.fixture(scope="module")
def manual_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    docs = tmp_path_factory.mktemp("manual")
    (docs / "config.html").write_text(SERVER_CONFIG)
    (docs / "git-push.html").write_text(PUSH_MANUAL)
    # Default settings (the linear reranker off): fusion alone ranks reserved_clients, which
    # mentions max_clients, above the max_clients entry; the named entry still comes first.
    with KnowledgeBase.open(docs / "kb.db") as kb:
        kb.add(str(docs / "config.html"))
        kb.add(str(docs / "git-push.html"))
        yield kb


def test_the_default_of_a_parameter_is_its_own_value(manual_kb: KnowledgeBase) -> None:
    answer = manual_kb.ask("What is the default value of max_clients?")
    assert not answer.abstained
    assert "100" in answer.answer.split("[")[0]  # the first sentence states it
    assert answer.citations[0].heading_path[-1] == "max_clients (integer)"
    port = manual_kb.ask("Which TCP port does the server listen on by default?")
    assert "6700" in port.answer


def test_an_answer_draws_on_answer_sources_chunks_from_few_documents(manual_kb: KnowledgeBase) -> None:
    """Two documents at two chunks each would give 4 hits; the answer tops up to answer_sources (5)."""
    hits = manual_kb.ask("What is the default value of max_clients?").hits
    assert len(hits) == manual_kb.settings.answer_sources == 5
    assert len({h.chunk.id for h in hits}) == 5
    assert [h.rank for h in hits] == sorted(h.rank for h in hits)


def test_an_answer_searches_once_and_caps_and_tops_up_that_one_list(
    manual_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The top-up was a second, uncapped search ranking the same candidates again."""
    retriever = manual_kb._retriever
    modes: list[str] = []
    search = retriever.search

    def counted(query: str, options: SearchOptions, *rest: object) -> list[Hit]:
        modes.append(options.mode)
        return search(query, options, *rest)

    monkeypatch.setattr(retriever, "search", counted)
    hits = manual_kb.ask("What is the default value of max_clients?").hits
    assert modes.count("hybrid") == 1  # the keyword searches after it check follow-ups
    assert len(hits) == manual_kb.settings.answer_sources
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


def test_an_entry_answer_names_its_option_verbatim(manual_kb: KnowledgeBase) -> None:
    answer = manual_kb.ask("How do I push without losing commits somebody else pushed in the meantime?")
    assert not answer.abstained
    assert answer.answer.startswith("--force-with-lease (--no-force-with-lease): ")  # as the options are typed


def test_follow_ups_are_specific_answerable_questions(manual_kb: KnowledgeBase) -> None:
    answer = manual_kb.ask("What is the default value of max_clients?")
    assert answer.follow_up_questions
    for question in answer.follow_up_questions:
        assert "Note" not in question and "max_clients" not in question
        assert question.startswith(("What does", "What is")) and question.endswith("?")
    assert "What is the default of reserved_clients?" in answer.follow_up_questions


def test_no_follow_ups_after_an_abstention(manual_kb: KnowledgeBase) -> None:
    answer = manual_kb.ask("Which company provides the employee pension scheme?")
    assert answer.abstained
    assert answer.follow_up_questions == ()


def chunk(heading_path: tuple[str, ...], text: str, title: str = "Guide") -> StoredChunk:
    return StoredChunk("c", "d", "default", "guide.md", title, 0, text, heading_path, None, "")


def test_generic_headings_never_become_follow_ups() -> None:
    chunks = [
        chunk(("Guide", "Note"), "Remember this."),
        chunk(("Guide", "EXAMPLES"), "Run it."),
        chunk(("Guide", "See also"), "Other pages."),
        chunk(("Guide", "2."), "Numbered."),
    ]
    assert offline_follow_ups(chunks, set(), "anything") == ()
    assert is_generic("Notes") and is_generic("OPTIONS") and not is_generic("Mileage rates")
    unanswerable = offline_follow_ups([chunk(("Guide", "Mileage rates"), "Paid per km.")], set(), "", lambda s: False)
    assert unanswerable == ()


@pytest.mark.parametrize("rerank", [False, True], ids=["named-entry-lookup", "linear-reranker"])
def test_search_puts_the_named_definition_first(manual_kb: KnowledgeBase, rerank: bool) -> None:
    hits = manual_kb.search("What is the default value of max_clients?", rerank=rerank, top_k=3, per_document=0)
    assert hits[0].chunk.heading_path[-1] == "max_clients (integer)"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_reranker_features_reward_the_asked_entry() -> None:
    entry = chunk(("Config", "core.autocrlf"), "Setting this variable to true converts line endings.")
    mention = chunk(("Config", "Overview"), "Many variables exist, such as core.autocrlf and others.")
    weights = dict.fromkeys(FEATURES, 0.0) | {"entry": 1.0}
    order = LinearReranker(weights).rerank("what does core.autocrlf do", [mention, entry], [2.0, 1.0])
    assert order == [1, 0]
    assert identifiers("Is --force-with-lease like git 2.39 or core.autocrlf, e.g. HashMap?") == [
        "--force-with-lease", "core.autocrlf", "hashmap",
    ]


def test_a_sentence_about_this_command_is_led_by_the_command_named_above_it() -> None:
    text = ("5.1 Character protrusion\n\n[<options>]{<set of fonts>}{<protrusion settings>}\\SetProtrusion\n\n"
            "Using this command, you can set the protrusion factors of a font. It takes three arguments.")
    signature = chunk(("Manual", "5.1 Character protrusion"), text)
    assert stated("Using this command, you can set the protrusion factors of a font.", signature) == (
        "\\SetProtrusion: Using this command, you can set the protrusion factors of a font."
    )
    # "It" is no back-reference to a named command: it is read after the sentence it refers to
    assert stated("It takes three arguments.", signature) == (
        "Using this command, you can set the protrusion factors of a font. It takes three arguments."
    )


def test_a_signature_of_arguments_only_takes_the_name_from_the_line_above() -> None:
    """A PDF's margin note puts the name on a line of its own, above the arguments."""
    text = ("5.4 Additional kerning\n\n\\SetExtraKerning\n\n[<options>]{<set of fonts>}{<kerning settings>}\n\n"
            "With this command, you can fine tune the extra kerning.")
    signature = chunk(("Manual", "5.4 Additional kerning"), text)
    assert stated("With this command, you can fine tune the extra kerning.", signature) == (
        "\\SetExtraKerning: With this command, you can fine tune the extra kerning."
    )


def test_a_sentence_introducing_a_line_is_followed_by_it() -> None:
    """"...by saying:" answers only with what is to be said, set apart below it."""
    text = ("Using this command, you could for instance disable font expansion by saying:\n\n"
            "\\microtypesetup{expansion=false}\n\nThe next paragraph goes on about other things at length.")
    entry = chunk(("Manual", "\\microtypesetup"), text)
    assert stated("Using this command, you could for instance disable font expansion by saying:", entry) == (
        "\\microtypesetup: Using this command, you could for instance disable font expansion by saying: "
        "\\microtypesetup{expansion=false}"
    )
    prose = chunk(("Manual", "Setup"), "It works as follows:\n\nFirst a long paragraph\nthat runs over two lines.")
    assert stated("It works as follows:", prose) == "It works as follows:"


def test_a_tex_macro_heading_is_an_entry_term() -> None:
    entry = chunk(("Manual", "6 Context-sensitive setup", "\\microtypecontext"), "This command changes the context.")
    assert stated("This command changes the context.", entry) == "\\microtypecontext: This command changes the context."


def test_a_marked_term_and_a_symbol_term_are_entry_terms() -> None:
    """Texinfo manuals set letter marks and aliases after an entry's name (`HISTSIZE <S>`,
    `AUTO_LIST (-9) <D>`) and define operators and escapes in symbols (`%~`, `<<< word`): the
    entries are still terms, so a sentence of theirs names what it is about; titles are not."""
    for term in ("pipestatus <S> <Z>", "HISTSIZE <S>", "AUTO_LIST (-9) <D>", "%~", "%d, %/", "<<< word"):
        entry = chunk(("Manual", "2 Parameters", term), "The thing the entry defines.")
        assert stated("The thing the entry defines.", entry) == f"{term}: The thing the entry defines."
    for title in ("OPTIONS", "Overview (optional)", "16.2.4 History", "— see also"):
        section = chunk(("Manual", title), "The thing the section says.")
        assert stated("The thing the section says.", section) == "The thing the section says."
    assert named_entry(["ps4"], chunk(("Manual", "PS4 <S>"), "The execution trace prompt."))


def test_a_missing_default_is_looked_for_only_when_asked() -> None:
    wanted = missing_value(Focus.of("What window size does gc use by default?"), ["The window size used by gc."])
    assert wanted is not None and wanted("This defaults to 250.") and not wanted("It is used by gc.")
    assert missing_value(Focus.of("What window size does gc use by default?"), ["This defaults to 250."]) is None
    assert missing_value(Focus.of("What does gc do?"), ["It collects garbage."]) is None


def test_a_command_asked_for_is_looked_for_when_the_answer_names_none() -> None:
    question = Focus.of("Which command lets accented characters inherit the settings of their base character?")
    wanted = missing_value(question, ["In most cases, accented characters should inherit the settings."])
    assert wanted is not None and wanted("Using the command \\DeclareCharacterInheritance, you may declare classes.")
    assert not wanted("Such classes of characters are declared in pairs.")
    # an entry's sentence is stated with its term, which names what was asked
    assert missing_value(question, ["\\DeclareCharacterInheritance: Base characters may have lists."]) is None
    assert missing_value(Focus.of("How do I make accented characters inherit the settings?"), ["They inherit."]) is None


SETTINGS_TABLE = """# Search settings

These settings shape every search the service runs; the table lists each with its default.

| Setting | Default | Meaning |
| --- | --- | --- |
| top_k | 10 | how many hits a search returns |
| chunk_overlap | 0.15 | the share of a chunk repeated in the next |
| fusion_weight | 0.3 | the keyword share of hybrid fusion |
"""


def test_a_table_row_answers_with_its_header(tmp_path: Path) -> None:
    (tmp_path / "settings.md").write_text(SETTINGS_TABLE)
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        kb.add(str(tmp_path / "settings.md"))
        answer = kb.ask("What is the default of chunk_overlap?")
    assert answer.answer.startswith("| Setting | Default | Meaning | | chunk_overlap | 0.15 |")
    assert answer.citations[0].quote == "| chunk_overlap | 0.15 | the share of a chunk repeated in the next |"


def test_a_question_set_in_something_the_manual_never_names_abstains(manual_kb: KnowledgeBase) -> None:
    """Every other word is the manual's own and the answer would quote the parameter asked about,
    so the fitted gate lets it through; but the manual never mentions replicas (answering/evidence.py,
    unknown_setting)."""
    question = "What is the default value of max_clients for replicas?"
    answer = manual_kb.ask(question)
    assert answer.abstained and answer.citations == ()
    manual_kb.settings.answer_min_answerable = 0.0  # the abstention gate off: the rule with it
    try:
        assert not manual_kb.ask(question).abstained
    finally:
        manual_kb.settings.answer_min_answerable = None


def test_an_option_signature_heading_is_an_entry_term() -> None:
    """DocBook sets an option's arguments and default in its term; the entry still names the option."""
    assert signature_names("--leak-check=<no|summary|yes|full> [default: summary]") == ("--leak-check",)
    assert signature_names("-m <msg>, --message=<msg>") == ("-m", "--message")
    assert signature_names("--cache-sim=no|yes [yes]") == ("--cache-sim",)
    assert signature_names("-I<dir> --include=<dir> [default: none]") == ("-I", "--include")
    assert signature_names("3.1. Settings") == () and signature_names("--foo is a great thing to use") == ()
    entry = chunk(("Manual", "4.3. Options", "--track-origins=<yes|no> [default: no]"),
                  "Controls whether Memcheck tracks the origin of uninitialised values. Use --track-origins=yes to see them.")
    assert stated("Controls whether Memcheck tracks the origin of uninitialised values.", entry) == (
        "--track-origins=<yes|no> [default: no]: Controls whether Memcheck tracks the origin of uninitialised values."
    )
    assert stated("Use --track-origins=yes to see them.", entry) == "Use --track-origins=yes to see them."
    assert named_entry(["--track-origins"], entry) and not named_entry(["--track"], entry)


def test_a_sentence_introducing_a_short_list_is_followed_by_it() -> None:
    text = ("Note that Valgrind also reads options from three places:\n\nThe file ~/.valgrindrc\n"
            "The environment variable $VALGRIND_OPTS\nThe file ./.valgrindrc\n\nThese are processed in order.")
    section = chunk(("Manual", "Setting Default Options"), text)
    assert stated("Note that Valgrind also reads options from three places:", section) == (
        "Note that Valgrind also reads options from three places: The file ~/.valgrindrc; "
        "The environment variable $VALGRIND_OPTS; The file ./.valgrindrc"
    )


def test_a_sentence_about_this_is_preceded_by_what_this_is() -> None:
    text = ("Suppressions are read at start-up. To make it easier to write suppressions, you can use the "
            "--gen-suppressions=yes option. This tells Valgrind to print out a suppression for each error.\n\n"
            "This means more output.")
    section = chunk(("Manual", "What Valgrind does"), text)
    assert stated("This tells Valgrind to print out a suppression for each error.", section) == (
        "To make it easier to write suppressions, you can use the --gen-suppressions=yes option. "
        "This tells Valgrind to print out a suppression for each error."
    )
    assert stated("This means more output.", section) == "This means more output."  # opens its paragraph
    assert stated("Suppressions are read at start-up.", section) == "Suppressions are read at start-up."


def test_a_question_naming_what_the_manual_never_mentions_abstains(manual_kb: KnowledgeBase) -> None:
    """The rest of the question is the manual's own words, but no chunk holds "Kubernetes"
    (answering/evidence.py, unknown_name)."""
    assert manual_kb.ask("How many concurrent connections does the server allow in Kubernetes by default?").abstained
    assert not manual_kb.ask("How many concurrent connections does the server allow by default?").abstained


CONTEXT_MANUAL = """<html><head><title>fontkit</title></head><body>
<h1>fontkit manual</h1>
<h2>Context-sensitive setup</h2>
<p>The package lets you change the context of the current group. A context applies until the group ends.</p>
<h2>Contexts and footnotes</h2>
<p>Footnote markers get their own context, so that their spacing differs from the text.</p>
<h2>Letterspacing</h2>
<p>Use the tracking command to letterspace a word; the context decides how much.</p>
</body></html>"""


def test_a_name_spelled_with_an_inner_capital_that_no_chunk_writes_abstains(tmp_path: Path) -> None:
    """ "ConTeXt" is the plain word "context" to the keyword index, which the manual uses throughout:
    the answerer looks the name up (answering/evidence.py, unknown_name)."""
    (tmp_path / "fontkit.html").write_text(CONTEXT_MANUAL)
    with KnowledgeBase.open(tmp_path / "kb.db") as kb:
        kb.add(str(tmp_path / "fontkit.html"))
        assert kb.ask("How do I change the context of footnote markers in ConTeXt?").abstained
        assert not kb.ask("How do I change the context of footnote markers?").abstained


def test_an_example_caption_is_followed_by_its_command() -> None:
    text = ("To restore a file in the index to match the version in HEAD (this is the same as using git-reset(1))\n\n"
            "$ git restore --staged hello.c\n\nor you can restore both the index and the working tree")
    examples = chunk(("git-restore(1)", "EXAMPLES"), text)
    caption = "To restore a file in the index to match the version in HEAD (this is the same as using git-reset(1))"
    assert stated(caption, examples) == f"{caption} $ git restore --staged hello.c"
    prose = chunk(("Guide", "Notes"), "A line without a stop\n\nFollowed by another plain line")
    assert stated("A line without a stop", prose) == "A line without a stop"


def test_a_file_asked_for_is_looked_for_when_the_answer_names_none() -> None:
    question = Focus.of("In which file do I raise pdfTeX's memory parameters?")
    wanted = missing_value(question, ["Memory parameter pdf_mem_size too small."])
    assert wanted is not None and wanted("For web2c-based systems, change the settings in texmf.cnf.")
    assert not wanted("It can be increased, e.g. by setting the parameter.")
    assert missing_value(question, ["Change the settings in texmf.cnf."]) is None


def _capped(ranked: list[Hit], top_k: int, per_document: int) -> list[str]:
    counts: dict[str, int] = {}
    first = []
    for hit in ranked:
        if counts.get(hit.chunk.document_id, 0) < per_document and len(first) < top_k:
            counts[hit.chunk.document_id] = counts.get(hit.chunk.document_id, 0) + 1
            first.append(hit.chunk.id)
    return first + [hit.chunk.id for hit in ranked if hit.chunk.id not in first][: top_k - len(first)]


def test_an_answer_takes_three_chunks_of_a_document_before_other_documents(example_kb: KnowledgeBase) -> None:
    """The third entry of the page that answers outranks other pages' near misses (README, "Answers")."""
    question = "How many days of annual leave do employees get, and can unused days be carried over?"
    ranked = example_kb.search(question, top_k=50, per_document=0)
    hits = [hit.chunk.id for hit in example_kb.ask(question).hits]
    assert _capped(ranked, 5, 2) != _capped(ranked, 5, 3)  # the question tells the two caps apart
    assert hits == _capped(ranked, 5, 3)


def test_follow_ups_read_as_a_users_questions() -> None:
    title = "Dvips: A DVI-to-PostScript translator"
    chunks = [
        chunk(("Dvips", "Option details", "‘-T hsize,vsize’"), "Set the paper size to (hsize,vsize).", title),
        chunk(("Dvips", "Configuration file paper size command"), "The @ command sets the paper size.", title),
        chunk(("FAQ", "How do I create a new database?"), "Run sqlite3 with the file's name.", "SQLite FAQ"),
        chunk(("Guide", "How to install on a server"), "Copy the binary.", "Guide"),
    ]
    assert offline_follow_ups(chunks, set(), "", lambda subject: True) == (
        "What does -T do?",  # Texinfo's quotes around an option are typography
        "What does Dvips say about Configuration file paper size command?",
        "How do I create a new database?",
    )
    assert offline_follow_ups(chunks[3:], set(), "", lambda subject: True) == ("How do I install on a server?",)
