"""Which sentences of the retrieved chunks an offline answer may quote."""

from __future__ import annotations

import numpy as np

from sourcebook.answering.extractive import (
    ExtractiveAnswerer, ExtractiveConfig, ScoredSentence, _selected, heading_keys,
)
from sourcebook.answering.focus import Focus, bonus, missing_value, stated
from sourcebook.chunking import sentence_texts
from sourcebook.models import Hit, StoredChunk
from sourcebook.reranking import identifiers
from tests.answering.test_reference_answers import chunk as make_chunk


def test_a_numbered_section_title_is_a_heading_not_an_answer_sentence() -> None:
    """The splitter cuts "10." off a numbered title; the rest must still be known as the heading."""
    title = "10. Converting An Entire Database To A Text File"
    text = f'{title}\n\nUse the ".dump" command to convert the entire contents of a database into a text file.'
    chunk = make_chunk((title,), text, title="cli")
    keys = heading_keys(chunk)
    sentences = [s for s in sentence_texts(text) if " ".join(s.lower().split()) not in keys]
    assert sentences == [s for s in sentence_texts(text) if s.startswith(("10.", "Use"))]
    assert "converting an entire database to a text file" in keys


def test_a_paragraph_ending_in_a_comma_is_followed_by_the_line_set_apart_below_it() -> None:
    """"...for example, run," says nothing without the command on the line below it."""
    run = "To use the IPAex fonts, for example, run,"
    text = f"Fontmaps are set up with updmap. {run}\n\nkanji-config-updmap --sys ipaex\n\nwhere --sys is system-wide."
    section = make_chunk(("Manual", "Quick guide"), text)
    assert stated(run, section) == f"{run} kanji-config-updmap --sys ipaex"
    inline = make_chunk(("Manual", "Quick guide"), f"{run}\nkanji-config-updmap --sys ipaex and more prose.")
    assert stated(run, inline) == run  # a comma inside a paragraph introduces nothing


def test_a_sentence_whose_subject_is_a_pronoun_is_stated_after_what_it_refers_to() -> None:
    """ "They", "It" (with an adverb, too) refer to the sentence before them in their paragraph."""
    pairs = [
        ("CJK users are required to have Subfont Definition Files installed.", "They are available in ttfutils."),
        ("'-w 1' denotes vertical writing.", "It automatically enables the vert feature."),
    ]
    section = make_chunk(("Manual", "Quick guide"), "\n\n".join(f"{before} {after}" for before, after in pairs))
    for before, after in pairs:
        assert stated(after, section) == f"{before} {after}"
    elsewhere = make_chunk(("M", "S"), "x")
    assert all(stated(after, elsewhere) == after for _, after in pairs)


def _scored(text: str, section: StoredChunk, score: float) -> ScoredSentence:
    return ScoredSentence(text, Hit(1, score, section), score, score, score)


def test_a_sentence_shown_with_its_antecedent_takes_one_slot() -> None:
    """The antecedent, chosen first, is not quoted again; the slot it held goes to the next sentence."""
    first, then = "CJK users need Subfont Definition Files installed.", "They are available in the ttfutils package."
    section = make_chunk(("Manual", "CJK"), f"{first} {then}\n\nOther fonts need nothing. Type 1 fonts are embedded.")
    ranked = [_scored(text, section, 1.0 - i / 10) for i, text in
              enumerate([first, then, "Other fonts need nothing.", "Type 1 fonts are embedded."])]
    chosen = _selected(ranked, 2)
    assert [statement for _, statement in chosen] == [f"{first} {then}", "Other fonts need nothing."]
    assert [sentence.text for sentence, _ in chosen] == [then, "Other fonts need nothing."]




def test_a_name_asked_for_is_one_the_question_does_not_write() -> None:
    """ "OpenType" repeats the question; the flag asked for is fsType."""
    question = Focus.of("Which OpenType flag does the driver read to decide whether embedding is permitted?")
    wanted = missing_value(question, ["In OpenType font format, licensing information can be recorded."])
    assert wanted is not None and wanted("It is indicated by the flag called fsType.")
    assert missing_value(question, ["It is indicated by the flag called fsType."]) is None
    assert Focus.of("Which date and time function returns seconds since 1970?").wants_kind
    assert not Focus.of("What does the --foo option do?").wants_kind


def test_dot_commands_calls_and_footnoted_words_as_identifiers() -> None:
    assert identifiers('Use the ".dump" command, or .nullvalue STRING') == [".dump", ".nullvalue"]
    assert identifiers("The unixepoch() function returns seconds.") == ["unixepoch"]
    assert identifiers("Fonts can be recorded.⁴ And end.Next") == ["end.next"]  # a footnote mark is no name
    assert identifiers("version 2.39 ...and e.g. this") == []


def test_a_function_asked_for_is_one_written_as_called() -> None:
    """"1970-01-01" and "built-in" are names of a sort, but no function; any chunk near the top may give it."""
    question = Focus.of("Which date and time function returns the number of seconds since 1970 as an integer?")
    wanted = missing_value(question, ["INTEGER as Unix Time, the number of seconds since 1970-01-01 in built-in types."])
    assert wanted is not None and wanted.anywhere
    assert wanted("The unixepoch() function returns a unix timestamp.") and not wanted("Use the built-in functions.")
    default = missing_value(Focus.of("What window size does gc use by default?"), ["The window size used by gc."])
    assert default is not None and not default.anywhere  # another entry's default is not the asked one's


def test_the_default_bonus_goes_to_a_sentence_stating_a_value() -> None:
    """Both sentences mention the default; only one gives it."""
    question = Focus.of("What is the default suggested cache size?")
    entry = make_chunk(("Pragmas", "cache_size"), "x")
    mentions = bonus(question, "The default suggested cache size can be altered at compile time.", entry, False)
    states = bonus(question, "The default suggested cache size is -2000.", entry, False)
    assert states > mentions
    assert bonus(question, "This defaults to simple.", entry, False) == states


def test_a_sentence_defining_a_name_outranks_one_that_only_writes_it() -> None:
    question = Focus.of("Which fontmap option declares that a font is for vertical writing?")
    section = make_chunk(("Manual", "Layout features"), "x")
    defines = bonus(question, "‘-w 1’ denotes the font is for vertical writing.", section, False)
    mentions = bonus(question, "With the ‘-w’ option, writing mode can be specified.", section, False)
    assert defines > mentions > 0
    assert bonus(question, "The option denotes vertical writing.", section, False) == 0  # names nothing


class _SameVector:
    """Every text embeds alike, so a sentence's score is its lexical overlap (and its rank the bonuses)."""

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 2)) / np.sqrt(2)


def _scores(question: str, text: str) -> dict[str, ScoredSentence]:
    answerer = ExtractiveAnswerer(_SameVector(), ExtractiveConfig())  # type: ignore[arg-type]
    hits = [Hit(1, 1.0, make_chunk(("Manual", "Setup"), text))]
    return {s.text: s for s in answerer._score_sentences(question, hits, np.ones(2) / np.sqrt(2))}


def test_a_pronoun_sentence_is_scored_with_its_antecedent_but_ranked_on_its_own_cues() -> None:
    before, after = "CJK users need Subfont Definition Files.", "They are available in the ttfutils package."
    scores = _scores("Which package provides the Subfont Definition Files?", f"{before} {after}")
    assert scores[after].score > scores[before].score  # alone it shares only "package" with the question
    named = _scores("How do I get a suppression printed?",
                    "You can use the --gen-suppressions=yes option. This tells Valgrind to print a suppression.")
    option, pronoun = named["You can use the --gen-suppressions=yes option."], named["This tells Valgrind to print a suppression."]
    assert option.rank_score > option.score and pronoun.rank_score == pronoun.score


def test_a_default_stated_of_the_asked_name_in_another_entry_is_quoted() -> None:
    """The asked option's entry gives no default; the variable's entry states it of that option."""
    question = "What window size does tool pack --deep use by default?"
    option = make_chunk(("Manual", "OPTIONS", "--deep"),
                        "Usually tool pack runs quickly with a fair window size. The --deep window search takes far more time.")
    variable = make_chunk(("Manual", "CONFIGURATION", "pack.deepWindow"),
                          "The window size used by tool pack --deep. This defaults to 250, a large window.")
    other = make_chunk(("Manual", "CONFIGURATION", "pack.window"), "The window size of tool pack. This defaults to 10.")
    hits = [Hit(1, 3.0, option), Hit(2, 2.0, variable), Hit(3, 1.0, other)]
    answer = ExtractiveAnswerer(_SameVector(), ExtractiveConfig()).answer(question, hits, np.ones(2) / np.sqrt(2))  # type: ignore[arg-type]
    assert "250" in answer.answer and "defaults to 10" not in answer.answer
