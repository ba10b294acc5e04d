"""Built-in evaluation: retrieval quality on BEIR-layout datasets, answer quality on QA files.

So users can measure their own setup ("did my change make it better?") with the
metrics the literature reports, and CI can guard a figure.
"""

from .answers import AnswerReport, evaluate_answers
from .retrieval import RetrievalReport, evaluate_retrieval, open_index

__all__ = ["AnswerReport", "RetrievalReport", "evaluate_answers", "evaluate_retrieval", "open_index"]
