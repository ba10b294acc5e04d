"""The confidence formula on fixed inputs (see answering/confidence.py)."""

from __future__ import annotations

import pytest

from sourcebook.answering.confidence import answer_confidence
from sourcebook.models import CitationCheck


def check(ratio: float) -> CitationCheck:
    verdict = "supported" if ratio == 1 else "unsupported" if ratio == 0 else "partially_supported"
    return CitationCheck(verdict, ratio, (), ())  # type: ignore[arg-type]


@pytest.mark.parametrize(("retrieval", "ratio", "expected"), [
    (0.9, 1.0, 0.9), (0.9, 0.5, 0.45), (0.9, 0.0, 0.0), (0.2, 1.0, 0.2), (0.12345678, 1.0, 0.1235),
])
def test_answer_confidence_is_retrieval_times_support(retrieval, ratio, expected):
    assert answer_confidence(retrieval, check(ratio), abstained=False) == expected


def test_abstentions_and_unchecked_answers_report_retrieval_confidence():
    assert answer_confidence(0.3, check(1.0), abstained=True) == 0.3
    assert answer_confidence(0.3, None, abstained=False) == 0.3


def test_more_support_or_better_retrieval_never_lowers_confidence():
    values = [answer_confidence(r, check(s), False) for r in (0.2, 0.5, 0.9) for s in (0.0, 0.5, 1.0)]
    grid = [values[i:i + 3] for i in (0, 3, 6)]
    assert all(row == sorted(row) for row in grid)
    assert all(list(col) == sorted(col) for col in zip(*grid))
    assert all(0.0 <= v <= 1.0 for v in values)
