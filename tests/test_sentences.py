"""Sentence splitting: hand cases from prose and scientific abstracts, plus invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sourcebook.chunking import sentence_texts, split_sentences

CASES = [
    # plain prose
    ("Hello world. This is a test.", ["Hello world.", "This is a test."]),
    ("Is it? Yes! Fine.", ["Is it?", "Yes!", "Fine."]),
    ("Really?! Yes.", ["Really?!", "Yes."]),
    ("One sentence without a full stop", ["One sentence without a full stop"]),
    ("It ended. 42 people came.", ["It ended.", "42 people came."]),
    ("lowercase after a stop. continues here", ["lowercase after a stop. continues here"]),
    ("No space after.The stop", ["No space after.The stop"]),
    # quotes and brackets
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("He asked (why?) and left. Then", ["He asked (why?) and left.", "Then"]),
    ("(It is so.) The end.", ["(It is so.)", "The end."]),
    ('It ended. "Why?" she asked.', ["It ended.", '"Why?" she asked.']),
    ("It ended. (See below.) Next.", ["It ended.", "(See below.)", "Next."]),
    ("It was ‘done.’ Then more.", ["It was ‘done.’", "Then more."]),
    # abbreviations
    ("We used e.g. Python. It works.", ["We used e.g. Python.", "It works."]),
    ("Some tools, i.e. Make, run. Fine.", ["Some tools, i.e. Make, run.", "Fine."]),
    ("Cats vs. Dogs is a film. Yes.", ["Cats vs. Dogs is a film.", "Yes."]),
    ("Dr. Smith met Mrs. Jones. They talked.", ["Dr. Smith met Mrs. Jones.", "They talked."]),
    ("Mr. and Ms. Lee came. Prof. Kim did not.", ["Mr. and Ms. Lee came.", "Prof. Kim did not."]),
    ("As shown in Fig. 2, it grows. Then", ["As shown in Fig. 2, it grows.", "Then"]),
    ("See Figs. 3 and 4. Then", ["See Figs. 3 and 4.", "Then"]),
    ("Patient No. 5 died. Others lived.", ["Patient No. 5 died.", "Others lived."]),
    ("The answer was No. Then we left.", ["The answer was No.", "Then we left."]),
    ("It costs approx. 5 dollars. Cheap.", ["It costs approx. 5 dollars.", "Cheap."]),
    ("Made in the U.S. Army labs. Fine.", ["Made in the U.S. Army labs.", "Fine."]),
    (
        "Written by J. Smith and R. A. Fisher. Good.",
        ["Written by J. Smith and R. A. Fisher.", "Good."],
    ),
    ("Apples, pears, etc. are fruit. Yes.", ["Apples, pears, etc. are fruit.", "Yes."]),
    ("Apples, pears, etc. They are fruit.", ["Apples, pears, etc.", "They are fruit."]),
    ("Cf. Smith. Then", ["Cf. Smith.", "Then"]),
    ("As said on p. 12 of it. Then", ["As said on p. 12 of it.", "Then"]),
    # numbers, URLs, e-mail addresses, file names, versions
    ("Pi is 3.14 roughly. Next.", ["Pi is 3.14 roughly.", "Next."]),
    ("It is .5 mm. Next.", ["It is .5 mm.", "Next."]),
    ("Visit example.com today. Then", ["Visit example.com today.", "Then"]),
    ("Visit https://example.com/a.b?x=1. Then", ["Visit https://example.com/a.b?x=1.", "Then"]),
    ("Mail jane.doe@example.org now. Then", ["Mail jane.doe@example.org now.", "Then"]),
    ("Edit config.yaml and main.py. Then", ["Edit config.yaml and main.py.", "Then"]),
    ("Upgrade to v1.2.3 now. Then", ["Upgrade to v1.2.3 now.", "Then"]),
    # ellipses
    ("Wait... what happened? Nothing.", ["Wait... what happened?", "Nothing."]),
    ("He paused... Then he spoke.", ["He paused...", "Then he spoke."]),
    ("He paused… then spoke.", ["He paused… then spoke."]),
    # newlines
    ("First para.\n\nSecond para", ["First para.", "Second para"]),
    ("A heading\n\nBody text.", ["A heading", "Body text."]),
    ("Introduction\nThis paper studies X.", ["Introduction", "This paper studies X."]),
    ("A wrapped line that goes\non here. Next.", ["A wrapped line that goes\non here.", "Next."]),
    ("The results of the\nStudy were good.", ["The results of the\nStudy were good."]),
    ("Lists, such as\nApples, work.", ["Lists, such as\nApples, work."]),
    (
        "Items:\n- one\n- two\n1. three\n2) four",
        ["Items:", "- one", "- two", "1. three", "2) four"],
    ),
    ("Table:\n| a | b |\n| 1 | 2 |", ["Table:", "| a | b |", "| 1 | 2 |"]),
    ("As in Fig.\n3 we see. Then", ["As in Fig.\n3 we see.", "Then"]),
    ("Trailing newline.\n", ["Trailing newline."]),
    ("  \n Leading space. Then  ", ["Leading space.", "Then"]),
]

ABSTRACT_CASES = [
    (
        "Effects were significant (p < 0.05). The control group did not change.",
        ["Effects were significant (p < 0.05).", "The control group did not change."],
    ),
    (
        "The difference was small, p < 0.05. Larger trials are needed.",
        ["The difference was small, p < 0.05.", "Larger trials are needed."],
    ),
    (
        "Smith et al. showed a rise. Jones et al. (2019) did not.",
        ["Smith et al. showed a rise.", "Jones et al. (2019) did not."],
    ),
    (
        "We enrolled mice (n = 12). The mean weight was 21.4 g (SD 1.2).",
        ["We enrolled mice (n = 12).", "The mean weight was 21.4 g (SD 1.2)."],
    ),
    (
        "Levels fell (Fig. 2). In contrast, IL-6 rose 2.5-fold.",
        ["Levels fell (Fig. 2).", "In contrast, IL-6 rose 2.5-fold."],
    ),
    (
        "Mice were infected with S. Typhi. The bacteria grew.",
        ["Mice were infected with S. Typhi.", "The bacteria grew."],
    ),
    (
        "We measured vitamin D. This was low. Cyclin B. Overexpression followed.",
        # Known limit: a capitalised word after an initial reads as a name.
        ["We measured vitamin D.", "This was low.", "Cyclin B. Overexpression followed."],
    ),
    (
        "Cells arrested in anaphase A. We then imaged them.",
        ["Cells arrested in anaphase A.", "We then imaged them."],
    ),
    (
        "The HR was 1.8 (95% CI, 1.2-2.6). Mortality was 12.5%. [Ref. 3] agrees.",
        ["The HR was 1.8 (95% CI, 1.2-2.6).", "Mortality was 12.5%.", "[Ref. 3] agrees."],
    ),
    (
        "BACKGROUND: Obesity is common. METHODS: We did a trial.",
        ["BACKGROUND: Obesity is common.", "METHODS: We did a trial."],
    ),
    (
        "Samples were stored at -80 degrees C. RNA was then extracted.",
        ["Samples were stored at -80 degrees C.", "RNA was then extracted."],
    ),
    (
        "As reported (Proc. Natl. Acad. Sci. USA 95, 1998). It holds.",
        ["As reported (Proc. Natl. Acad. Sci. USA 95, 1998).", "It holds."],
    ),
    (
        "Cells were spun for 5 min. The pellet was kept.",
        ["Cells were spun for 5 min.", "The pellet was kept."],
    ),
    (
        "The dose (approx. 5 mg/kg i.v.) was safe. 20 patients responded.",
        ["The dose (approx. 5 mg/kg i.v.) was safe.", "20 patients responded."],
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES + ABSTRACT_CASES)
def test_hand_cases(text: str, expected: list[str]) -> None:
    assert sentence_texts(text) == expected


def test_empty_and_blank_text_have_no_sentences() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\t ") == []


def test_spans_are_offsets_into_the_text() -> None:
    text = "  One. Two!\n\nThree?  "
    assert split_sentences(text) == [(2, 6), (7, 11), (13, 19)]


ALPHABET = st.sampled_from(
    list("aAbBzZ019 .!?,;:'\"()[]-\n\t") + ["e.g.", "Dr.", "3.14", "...", "U.S.", " The", "\n\n"]
)


@given(st.lists(ALPHABET, max_size=80).map("".join))
def test_spans_cover_every_non_space_character_in_order(text: str) -> None:
    spans = split_sentences(text)
    covered = "".join(text[start:end] for start, end in spans)
    assert "".join(covered.split()) == "".join(text.split())
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end
        assert not text[start].isspace() and not text[end - 1].isspace()
        assert text[previous_end:start].strip() == ""
        previous_end = end
